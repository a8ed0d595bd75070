package app

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"

	"github.com/poppydesk/poppydesk/agentcore/redact"
)

// Default log rotation limits: the current file grows to DefaultLogMaxBytes, then it becomes
// poppydesk.log.1 and older files shift up to poppydesk.log.<DefaultLogKeep>; older ones are
// deleted. So the logs never take more than (Keep+1) × MaxBytes on disk.
const (
	DefaultLogMaxBytes = 5 << 20
	DefaultLogKeep     = 3
)

// RotatingFile is an io.Writer that appends to a file and rotates it by size.
//
// It is hand-written (about 80 lines) rather than taken from a library such as lumberjack
// because Poppydesk only needs size-based rotation, and a small writer with no dependency is
// easier to audit in a security product than a general one with time-based rotation,
// compression and background goroutines. Each Write is one whole slog record (the JSON handler
// writes a record in one call), so a record is never split across two files.
type RotatingFile struct {
	Path     string
	MaxBytes int64 // rotate when the next write would pass this size
	Keep     int   // number of old files kept (Path.1 … Path.Keep)

	mu   sync.Mutex
	f    *os.File
	size int64
}

// OpenRotatingFile opens (or creates, mode 0600) path for appending.
func OpenRotatingFile(path string, maxBytes int64, keep int) (*RotatingFile, error) {
	if maxBytes <= 0 || keep < 0 {
		return nil, fmt.Errorf("log rotation limits are invalid (max %d bytes, keep %d files); both must be positive", maxBytes, keep)
	}
	r := &RotatingFile{Path: path, MaxBytes: maxBytes, Keep: keep}
	if err := r.open(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *RotatingFile) open() error {
	f, err := os.OpenFile(r.Path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("opening the log file %s failed: %w; check that its folder exists and is writable", r.Path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("reading the size of the log file %s failed: %w", r.Path, err)
	}
	r.f, r.size = f, st.Size()
	return nil
}

// Write appends p, rotating first if p would make the file larger than MaxBytes.
func (r *RotatingFile) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return 0, fmt.Errorf("writing to the log file %s failed: it is closed", r.Path)
	}
	if r.size > 0 && r.size+int64(len(p)) > r.MaxBytes {
		if err := r.rotate(); err != nil {
			return 0, err
		}
	}
	n, err := r.f.Write(p)
	r.size += int64(n)
	return n, err
}

func (r *RotatingFile) rotate() error {
	if err := r.f.Close(); err != nil {
		return fmt.Errorf("closing the log file %s before rotating it failed: %w", r.Path, err)
	}
	r.f = nil
	name := func(i int) string { return fmt.Sprintf("%s.%d", r.Path, i) }
	if r.Keep == 0 {
		if err := os.Remove(r.Path); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("removing the full log file %s failed: %w", r.Path, err)
		}
	} else {
		_ = os.Remove(name(r.Keep)) // the oldest one goes; a missing file is fine
		for i := r.Keep - 1; i >= 1; i-- {
			if err := os.Rename(name(i), name(i+1)); err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("rotating the log file %s failed: %w", name(i), err)
			}
		}
		if err := os.Rename(r.Path, name(1)); err != nil {
			return fmt.Errorf("rotating the log file %s failed: %w", r.Path, err)
		}
	}
	return r.open()
}

// Close closes the current file.
func (r *RotatingFile) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}

// NewLogger returns a JSON slog logger writing to w. Every attribute goes through
// [redact.ReplaceAttr], so secrets under known names or with the shape of a JWT are masked
// before they reach the file (docs/DESIGN.md invariant 5).
func NewLogger(w io.Writer, level slog.Leveler) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: redact.ReplaceAttr}))
}
