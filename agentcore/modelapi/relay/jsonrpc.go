package relay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
)

// JSON-RPC 2.0 error codes (JSON-RPC 2.0 §5.1) the relay answers with itself.
const (
	// CodeParseError: the line is not JSON.
	CodeParseError = -32700
	// CodeInvalidRequest: JSON, but not a JSON-RPC message MCP accepts (a batch, a method that is
	// not a string, an id that is neither a string nor an integer, a message over MaxMessageBytes).
	CodeInvalidRequest = -32600
	// CodeUnavailable: the app could not be reached or started for this request (the first of
	// the implementation-defined server errors).
	CodeUnavailable = -32000
	// CodeAppStopped: the app ended while it handled this request, so its answer is lost.
	CodeAppStopped = -32001
)

// MaxMessageBytes bounds one message from the client. The largest the app accepts in a tool
// call's arguments is 256 KiB (modelapi.MaxArgumentBytes); a longer line is read through
// without being kept and answered with an error.
const MaxMessageBytes = 4 << 20

// kind is what a JSON-RPC message is.
type kind int

const (
	request kind = iota + 1
	notification
	response
)

// message is a JSON-RPC message from the client, checked.
type message struct {
	kind   kind
	id     json.RawMessage // requests and responses
	method string          // requests and notifications
	params json.RawMessage
}

// envelope is the part of a JSON-RPC message the relay reads.
type envelope struct {
	JSONRPC *string         `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  json.RawMessage `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// integerID matches a JSON integer (MCP request ids are strings or integers).
var integerID = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	if id[0] == '"' {
		var s string
		return json.Unmarshal(id, &s) == nil
	}
	return integerID.Match(id)
}

// parseClient checks one line from the client. It returns the message, or the error response
// to send back instead (nil for a blank line, which is skipped).
func parseClient(line []byte) (*message, []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, nil
	}
	if !json.Valid(line) {
		return nil, errorResponse(nil, CodeParseError, fmt.Sprintf("Parse error: the line is not valid JSON (it starts %s). Poppydesk's relay ignored it; send each JSON-RPC message as one line of JSON", excerpt(line)))
	}
	invalid := func(id json.RawMessage, why string) (*message, []byte) {
		if !validID(id) {
			id = nil
		}
		return nil, errorResponse(id, CodeInvalidRequest, "Invalid Request: "+why+". Poppydesk's relay ignored it")
	}
	if line[0] == '[' {
		return invalid(nil, "a JSON array (a JSON-RPC batch), which MCP does not use since 2025-06-18; send each message on its own line")
	}
	var e envelope
	if line[0] != '{' || json.Unmarshal(line, &e) != nil {
		return invalid(nil, "the message is not a JSON object with a string \"jsonrpc\"")
	}
	if e.JSONRPC == nil || *e.JSONRPC != "2.0" {
		return invalid(e.ID, `"jsonrpc" must be "2.0"`)
	}
	hasID := len(e.ID) > 0
	if hasID && !validID(e.ID) {
		return invalid(nil, "the id must be a string or an integer, got "+excerpt(e.ID))
	}
	m := &message{id: e.ID, params: e.Params}
	switch {
	case len(e.Method) > 0:
		if e.Method[0] != '"' || json.Unmarshal(e.Method, &m.method) != nil {
			return invalid(e.ID, "the method must be a string, got "+excerpt(e.Method))
		}
		m.kind = notification
		if hasID {
			m.kind = request
		}
	case hasID && (len(e.Result) > 0) != (len(e.Error) > 0):
		m.kind = response
	default:
		return invalid(e.ID, "the message is neither a request (method and id), a notification (method) nor a response (id with result or error)")
	}
	return m, nil
}

// errorResponse is a JSON-RPC error response line; a nil id is written as null (JSON-RPC 2.0
// §5: when the request's id could not be read).
func errorResponse(id json.RawMessage, code int, msg string) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, msg}})
	return b
}

// excerpt quotes the start of b for an error message.
func excerpt(b []byte) string {
	const n = 40
	if len(b) > n {
		return fmt.Sprintf("%q…", b[:n])
	}
	return fmt.Sprintf("%q", b)
}

// idKey is a request id as a map key: the same string however it is escaped, and strings and
// integers never collide.
func idKey(id json.RawMessage) string {
	var s string
	if json.Unmarshal(id, &s) == nil {
		return "s" + s
	}
	return "n" + string(id)
}

// appMessage is what the relay reads of a message from the app: its id and whether it is a
// response (to one of the client's requests, or to the relay's own initialize).
func appMessage(line []byte) (id json.RawMessage, isResponse bool) {
	var e struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
	}
	if json.Unmarshal(line, &e) != nil {
		return nil, false
	}
	return e.ID, len(e.Method) == 0 && len(e.ID) > 0
}

// lineReader reads the client's lines, each at most max bytes long.
type lineReader struct {
	r   *bufio.Reader
	max int
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// errTooLong is next's error for a line over the limit; the line was read through.
type errTooLong struct {
	size       int
	head, tail []byte // its first and last bytes
}

func (e *errTooLong) Error() string { return fmt.Sprintf("a message of %d bytes", e.size) }

// next returns the next line without its newline. A line over the limit is read to its end
// keeping only its first and last 4 KiB, and reported as *errTooLong. At the end of the input
// it returns io.EOF (after a last line without a newline).
func (l *lineReader) next() ([]byte, error) {
	var line []byte
	for {
		chunk, err := l.r.ReadSlice('\n')
		if len(line)+len(chunk) > l.max {
			return nil, l.skip(append(line, chunk...), err)
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return bytes.TrimSuffix(line, []byte("\n")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return line, nil
		default:
			return nil, err
		}
	}
}

// skip reads the rest of an over-long line that starts with start, keeping its last bytes in a
// buffer of fixed size.
func (l *lineReader) skip(start []byte, err error) error {
	const keep = 4 << 10
	e := &errTooLong{size: len(start), head: bytes.Clone(start[:min(keep, len(start))])}
	last := make([]byte, 0, 2*keep)
	push := func(b []byte) {
		if len(b) >= keep {
			last = append(last[:0], b[len(b)-keep:]...)
			return
		}
		if len(last)+len(b) > cap(last) {
			last = last[:copy(last, last[len(last)-(keep-len(b)):])]
		}
		last = append(last, b...)
	}
	push(start)
	for errors.Is(err, bufio.ErrBufferFull) {
		var chunk []byte
		chunk, err = l.r.ReadSlice('\n')
		e.size += len(chunk)
		push(chunk)
	}
	e.tail = last
	return e
}

// First and last keys of a request as the MCP SDKs write them: the Go and Python SDKs put
// "jsonrpc" and "id" first, the TypeScript SDK puts them last.
var (
	leadingID  = regexp.MustCompile(`^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?[0-9]+|"(?:[^"\\]|\\.)*")\s*[,}]`)
	trailingID = regexp.MustCompile(`[,{]\s*"id"\s*:\s*(-?[0-9]+|"(?:[^"\\]|\\.)*")\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$`)
)

// tooLongResponse answers a line over the limit: Invalid Request with the request's id when the
// line looks like a JSON object whose id is its first or last key, else a parse error.
func tooLongResponse(e *errTooLong) []byte {
	what := fmt.Sprintf("the message is %.1f MiB, more than the %d MiB Poppydesk's relay accepts; it was not sent to Poppydesk", float64(e.size)/(1<<20), MaxMessageBytes>>20)
	head := bytes.TrimSpace(e.head)
	if len(head) == 0 || head[0] != '{' {
		return errorResponse(nil, CodeParseError, fmt.Sprintf("Parse error: the line is not valid JSON (it starts %s) and %s", excerpt(head), what))
	}
	var id json.RawMessage
	if m := leadingID.FindSubmatch(e.head); m != nil {
		id = m[1]
	} else if m := trailingID.FindSubmatch(e.tail); m != nil {
		id = m[1]
	}
	if !validID(id) {
		id = nil
	}
	return errorResponse(id, CodeInvalidRequest, "Invalid Request: "+what+"; send less (tool arguments up to 256 KiB)")
}
