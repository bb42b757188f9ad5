package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
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

// keptPrefix is how much of a refused (too long) frame is kept to find
// its id, so the error reply names the request it answers.
const keptPrefix = 4 << 10

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
	_, _ = f.Write(errorFrame(id, code, msg))
}

// errorFrame is an error response line (id nil: null).
func errorFrame(id json.RawMessage, code int, msg string) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string           `json:"jsonrpc"`
		ID      json.RawMessage  `json:"id"`
		Error   sdk.RequestError `json:"error"`
	}{"2.0", id, sdk.RequestError{Code: code, Message: msg}})
	return append(b, '\n')
}

// filterFrames copies well-formed JSON-RPC messages from in to out, one per
// line, and answers what the library would silently drop: a line that is
// not JSON gets a parse error (-32700), a JSON value that is not a message
// (an array, a scalar, an object with neither method nor id, a method that
// is not a string) gets an invalid-request error (-32600), and so does a
// request over maxFrame (with its id when its first bytes hold it; a
// response over maxFrame fails the request of ours it answers instead).
// Prompts and cancels are noted in order (nil: not noted) before they are
// passed on. It closes out when in ends.
func filterFrames(in io.Reader, out *io.PipeWriter, w *frameWriter, order *promptOrder, log *slog.Logger) {
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
			err = nil
			switch id, kind := prefixID(line); kind {
			case frameResponse:
				// The client's answer to one of our requests: fail that
				// request rather than leave it waiting.
				if _, werr := out.Write(errorFrame(id, -32603, "Internal error: the client's response exceeds 8 MiB")); werr != nil {
					err = werr
					return
				}
			case frameRequest:
				w.reply(id, -32600, "Invalid Request: frame exceeds 8 MiB")
			default:
				w.reply(nil, -32600, "Invalid Request: frame exceeds 8 MiB")
			}
			continue
		}
		if len(bytes.TrimSpace(line)) > 0 {
			if fwd, msg, ok := checkFrame(line, w, log); ok {
				order.note(msg)
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
// consumed and reported as errTooLong, with its first keptPrefix bytes.
func readLine(r *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(buf)+len(chunk) > maxFrame {
			head := make([]byte, 0, keptPrefix)
			head = append(head, buf[:min(len(buf), keptPrefix)]...)
			head = append(head, chunk[:min(len(chunk), keptPrefix-len(head))]...)
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			// A read error (the input ended inside the line) comes back
			// from the next read; the line is answered first.
			return head, errTooLong
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

// inbound is what the filter learned of a message it passes on.
type inbound struct {
	method string // "" for a response
	params json.RawMessage
}

func checkFrame(line []byte, w *frameWriter, log *slog.Logger) ([]byte, inbound, bool) {
	line = bytes.TrimSpace(line)
	if !json.Valid(line) {
		log.Warn("acp: unparseable frame", "frame", clip(line))
		w.reply(nil, -32700, "Parse error")
		return nil, inbound{}, false
	}
	if line[0] != '{' {
		log.Warn("acp: frame is not a JSON-RPC object", "frame", clip(line))
		w.reply(nil, -32600, "Invalid Request: ACP messages are single JSON-RPC objects (no batches)")
		return nil, inbound{}, false
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		w.reply(nil, -32600, "Invalid Request")
		return nil, inbound{}, false
	}
	hasID := len(m.ID) > 0 && !bytes.Equal(m.ID, []byte("null"))
	if hasID && !validID(m.ID) {
		w.reply(nil, -32600, "Invalid Request: id must be a string or a number")
		return nil, inbound{}, false
	}
	var msg inbound
	switch {
	case len(m.Method) > 0:
		if m.Method[0] != '"' || json.Unmarshal(m.Method, &msg.method) != nil {
			w.reply(idOrNil(hasID, m.ID), -32600, "Invalid Request: method must be a string")
			return nil, inbound{}, false
		}
		msg.params = m.Params
	case hasID && (len(m.Result) > 0 || len(m.Error) > 0):
		// A response to one of our requests.
	default:
		log.Warn("acp: frame has neither a method nor a response", "frame", clip(line))
		if !hasID {
			w.reply(nil, -32600, "Invalid Request: a message needs a method (or, for a response, an id and a result or error)")
		}
		return nil, inbound{}, false
	}
	return line, msg, true
}

// validID reports whether a JSON-RPC id is a string or a number.
func validID(id json.RawMessage) bool {
	return len(id) > 0 && (id[0] == '"' || id[0] == '-' || id[0] >= '0' && id[0] <= '9')
}

// Kinds of a frame known only by its first bytes.
const (
	frameUnknown  = iota
	frameRequest  // a request or notification (method, params)
	frameResponse // a response, with its id (result, error)
)

// prefixID finds the top-level "id" of a JSON-RPC object from the first
// bytes of its frame (the rest was too long to read), and whether it is a
// request (or notification) or a response. It walks the object's members
// in order and stops at the first one the prefix cuts off. The id is nil
// unless a complete string or number id came before that. It is a request
// when members only requests have (method, params) came before the cut,
// a response when members only responses have (result, error) and the id
// did; otherwise its kind is unknown.
func prefixID(prefix []byte) (json.RawMessage, int) {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, frameUnknown
	}
	var id json.RawMessage
	request, response := false, false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			break
		}
		// Keys match as the library decodes them: case-insensitively,
		// the last one winning.
		key := strings.ToLower(fmt.Sprint(t))
		switch key {
		case "method", "params":
			request = true
		case "result", "error":
			response = true
		}
		var v json.RawMessage
		// A value the prefix ends in may look whole (a cut number):
		// only a value followed by more input counts.
		if err := dec.Decode(&v); err != nil || dec.InputOffset() >= int64(len(prefix)) {
			break
		}
		if key == "id" {
			id = v
		}
	}
	if !validID(id) {
		id = nil
	}
	switch {
	case request && !response:
		return id, frameRequest
	case response && !request && id != nil:
		return id, frameResponse
	}
	return id, frameUnknown
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

// promptOrder orders each session/cancel after the session/prompt frames
// that precede it on the wire, and before those that follow it.
//
// The library runs every request on its own goroutine but notifications
// one after another on a single one, so the handlers of a prompt and of
// the cancel written right behind it run in either order: the cancel
// could find nothing to cancel yet (and be lost), or, handled late, hit
// the client's next prompt. The frame filter sees frames in wire order.
// It numbers each session's prompt frames as it passes them on, and on a
// cancel frame records how many prompts of the session came before it
// (the mark): prompts numbered up to the mark are cancelled, later ones
// are not.
//
//   - A prompt handler takes its session's next number as it starts
//     (start) and gives it back when it returns (finish). begin, holding
//     the session's lock while it installs the prompt's slot, cancels the
//     slot at once when a cancel frame already covers its number
//     (cancelled); a cancel frame that reaches the filter after that
//     check has its handler run later still, and that finds the slot.
//   - A cancel handler (take) cancels the prompt in flight only when its
//     number is covered: a prompt that came after every cancel frame seen
//     so far is left alone.
//
// A session's numbers live while any of its prompts or cancels is between
// the filter and the end of its handler, then start again at 1. The
// filter notes only the frames the library will hand to a handler (their
// params decode and validate as it does), so every one is given back.
// Prompt handlers take numbers in the order they start, which is wire
// order unless a client pipelines prompts of one session (ACP has one in
// flight at a time; dsh refuses the second): a cancel between them may
// then land on either.
type promptOrder struct {
	mu       sync.Mutex
	sessions map[string]*promptCount
}

type promptCount struct {
	seen     int // prompt frames passed on
	started  int // prompt handlers started (the last number taken)
	finished int // prompt handlers returned
	mark     int // prompts numbered up to this came before a cancel frame
	cancels  int // cancel frames passed on whose handlers have not run
}

// note records a prompt or cancel frame the filter is passing on.
func (o *promptOrder) note(m inbound) {
	if o == nil {
		return
	}
	switch m.method {
	case sdk.AgentMethodSessionPrompt:
		var p sdk.PromptRequest
		if json.Unmarshal(m.params, &p) != nil || p.Validate() != nil {
			return // the library answers it without calling the handler
		}
		o.mu.Lock()
		o.count(string(p.SessionId)).seen++
		o.mu.Unlock()
	case sdk.AgentMethodSessionCancel:
		var p sdk.CancelNotification
		if json.Unmarshal(m.params, &p) != nil || p.Validate() != nil {
			return
		}
		o.mu.Lock()
		c := o.count(string(p.SessionId))
		c.mark = c.seen
		c.cancels++
		o.mu.Unlock()
	}
}

func (o *promptOrder) count(id string) *promptCount {
	c := o.sessions[id]
	if c == nil {
		if o.sessions == nil {
			o.sessions = map[string]*promptCount{}
		}
		c = &promptCount{}
		o.sessions[id] = c
	}
	return c
}

// release forgets a session's numbers once nothing is in transit.
func (o *promptOrder) release(id string, c *promptCount) {
	if c.finished >= c.seen && c.cancels <= 0 {
		delete(o.sessions, id)
	}
}

// start numbers a prompt handler of the session as it starts.
func (o *promptOrder) start(id string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := o.count(id)
	c.started++
	// A prompt the filter did not see (none in production) still gets a
	// number of its own.
	c.seen = max(c.seen, c.started)
	return c.started
}

// finish gives a prompt handler's number back.
func (o *promptOrder) finish(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if c := o.sessions[id]; c != nil {
		c.finished++
		o.release(id, c)
	}
}

// cancelled reports whether a cancel frame followed the prompt numbered
// ord.
func (o *promptOrder) cancelled(id string, ord int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := o.sessions[id]
	return c != nil && ord <= c.mark
}

// take is a cancel handler's start: it returns the numbers its cancel
// covers (those up to mark); ok is false for a cancel the filter did not
// see.
func (o *promptOrder) take(id string) (mark int, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := o.sessions[id]
	if c == nil || c.cancels == 0 {
		return 0, false
	}
	c.cancels--
	mark = c.mark
	o.release(id, c)
	return mark, true
}
