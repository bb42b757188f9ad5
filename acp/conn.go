package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"

	sdk "github.com/coder/acp-go-sdk"
)

// peer is everything the server asks of the client. It is the seam that
// keeps the JSON-RPC library swappable: *sdk.AgentSideConnection implements
// it today; the server never touches the connection otherwise.
type peer interface {
	SessionUpdate(ctx context.Context, n sdk.SessionNotification) error
	RequestPermission(ctx context.Context, r sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error)
	ReadTextFile(ctx context.Context, r sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error)
	WriteTextFile(ctx context.Context, r sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error)
	CreateTerminal(ctx context.Context, r sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error)
	TerminalOutput(ctx context.Context, r sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error)
	WaitForTerminalExit(ctx context.Context, r sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error)
	KillTerminal(ctx context.Context, r sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error)
	ReleaseTerminal(ctx context.Context, r sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error)
	Done() <-chan struct{}
}

var _ peer = (*sdk.AgentSideConnection)(nil)

// maxFrame is the largest inbound frame. The SDK's reader stops the whole
// connection on a longer line, so longer frames are refused here instead.
const maxFrame = 8 << 20

// frameWriter serializes every frame written to the client (the library's
// and the filter's own error replies) and runs hooks after a matching frame
// has been written.
type frameWriter struct {
	mu    sync.Mutex
	w     io.Writer
	hooks []writeHook
	// spawn runs a hook (on its own goroutine, tracked by the server).
	spawn func(func())
}

type writeHook struct {
	match []byte
	fn    func()
}

func (f *frameWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	n, err := f.w.Write(p)
	var run []func()
	if len(f.hooks) > 0 && isResponse(p) {
		kept := f.hooks[:0]
		for _, h := range f.hooks {
			if bytes.Contains(p, h.match) {
				run = append(run, h.fn)
			} else {
				kept = append(kept, h)
			}
		}
		f.hooks = kept
	}
	f.mu.Unlock()
	for _, fn := range run {
		// Never inline: the library holds its write lock while calling us.
		f.spawn(fn)
	}
	return n, err
}

// afterResponse runs fn once a response frame containing match is written.
func (f *frameWriter) afterResponse(match []byte, fn func()) {
	f.mu.Lock()
	f.hooks = append(f.hooks, writeHook{match: match, fn: fn})
	f.mu.Unlock()
}

// isResponse reports whether a frame the library wrote is a response: its
// envelope puts "method" before "result", and responses have no method.
func isResponse(p []byte) bool {
	i := bytes.Index(p, []byte(`"result":`))
	return i >= 0 && !bytes.Contains(p[:i], []byte(`"method":`))
}

func (f *frameWriter) reply(id json.RawMessage, code int, msg string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string           `json:"jsonrpc"`
		ID      json.RawMessage  `json:"id"`
		Error   sdk.RequestError `json:"error"`
	}{"2.0", id, sdk.RequestError{Code: code, Message: msg}})
	_, _ = f.Write(append(b, '\n'))
}

// filterFrames copies well-formed JSON-RPC messages from in to out, one per
// line, and answers what the library would silently drop: a line that is
// not JSON gets a parse error (-32700), a JSON value that is not a message
// (an array, a scalar, an object with neither method nor id, a method that
// is not a string) gets an invalid-request error (-32600). It closes out
// when in ends.
func filterFrames(in io.Reader, out *io.PipeWriter, w *frameWriter, log *slog.Logger) {
	r := bufio.NewReaderSize(in, 64<<10)
	var err error
	defer func() {
		if errors.Is(err, io.EOF) {
			err = nil
		}
		out.CloseWithError(err)
	}()
	for {
		var line []byte
		line, err = readLine(r)
		if errors.Is(err, errTooLong) {
			log.Warn("acp: frame too large; dropped", "limit", maxFrame)
			w.reply(nil, -32600, "Invalid Request: frame exceeds 8 MiB")
			err = nil
			continue
		}
		if len(bytes.TrimSpace(line)) > 0 {
			if fwd, ok := checkFrame(line, w, log); ok {
				if _, werr := out.Write(append(fwd, '\n')); werr != nil {
					err = werr
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

var errTooLong = errors.New("frame too long")

// readLine reads one line without its newline; a line over maxFrame is
// consumed and reported as errTooLong.
func readLine(r *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(buf)+len(chunk) > maxFrame {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
				return nil, err
			}
			return nil, errTooLong
		}
		buf = append(buf, chunk...)
		switch {
		case err == nil:
			return bytes.TrimRight(buf, "\r\n"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return buf, err
		}
	}
}

func checkFrame(line []byte, w *frameWriter, log *slog.Logger) ([]byte, bool) {
	line = bytes.TrimSpace(line)
	if !json.Valid(line) {
		log.Warn("acp: unparseable frame", "frame", clip(line))
		w.reply(nil, -32700, "Parse error")
		return nil, false
	}
	if line[0] != '{' {
		log.Warn("acp: frame is not a JSON-RPC object", "frame", clip(line))
		w.reply(nil, -32600, "Invalid Request: ACP messages are single JSON-RPC objects (no batches)")
		return nil, false
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		w.reply(nil, -32600, "Invalid Request")
		return nil, false
	}
	hasID := len(m.ID) > 0 && !bytes.Equal(m.ID, []byte("null"))
	if hasID && m.ID[0] != '"' && (m.ID[0] < '0' || m.ID[0] > '9') && m.ID[0] != '-' {
		w.reply(nil, -32600, "Invalid Request: id must be a string or a number")
		return nil, false
	}
	switch {
	case len(m.Method) > 0:
		if m.Method[0] != '"' {
			w.reply(idOrNil(hasID, m.ID), -32600, "Invalid Request: method must be a string")
			return nil, false
		}
	case hasID && (len(m.Result) > 0 || len(m.Error) > 0):
		// A response to one of our requests.
	default:
		log.Warn("acp: frame has neither a method nor a response", "frame", clip(line))
		if !hasID {
			w.reply(nil, -32600, "Invalid Request: a message needs a method (or, for a response, an id and a result or error)")
		}
		return nil, false
	}
	return line, true
}

func idOrNil(has bool, id json.RawMessage) json.RawMessage {
	if !has {
		return nil
	}
	return id
}

func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}
