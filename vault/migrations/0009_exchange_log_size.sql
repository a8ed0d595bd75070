-- Schema version 9: the exchange log's size (the sum of its rows' size column), kept by
-- triggers as rows come and go, so that keeping the log within its bytes reads one row: neither
-- the database's size, which grows with everything else it holds, nor a sum over every row.

CREATE TABLE exchange_log_size (
	id    INTEGER PRIMARY KEY CHECK (id = 1),
	bytes INTEGER NOT NULL
) STRICT;
INSERT INTO exchange_log_size (id, bytes) SELECT 1, COALESCE(SUM(size), 0) FROM exchanges INDEXED BY exchanges_size;
CREATE TRIGGER exchanges_size_insert AFTER INSERT ON exchanges BEGIN
	UPDATE exchange_log_size SET bytes = bytes + NEW.size WHERE id = 1;
END;
CREATE TRIGGER exchanges_size_delete AFTER DELETE ON exchanges BEGIN
	UPDATE exchange_log_size SET bytes = bytes - OLD.size WHERE id = 1;
END;
CREATE TRIGGER exchanges_size_update AFTER UPDATE OF size ON exchanges BEGIN
	UPDATE exchange_log_size SET bytes = bytes - OLD.size + NEW.size WHERE id = 1;
END;
