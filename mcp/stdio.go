package mcp

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioTransport runs a command and speaks newline-delimited JSON-RPC over
// its stdin and stdout, like the SDK's CommandTransport, with two
// differences: lines of stdout that cannot start a JSON-RPC message (a
// banner such as "starting…", a stray print) are dropped instead of ending
// the session, and the end of the read side is reported (ended), so a
// failed call can tell a dead connection from a bad result.
type stdioTransport struct {
	cmd       *exec.Cmd
	terminate time.Duration // after closing stdin, before SIGTERM and SIGKILL
	logger    *slog.Logger
	stderr    *tail  // dropped lines are noted here too
	ended     func() // called once the read side failed or closed
	// warn tells the user about the first dropped line (nil: log only).
	warn func(line string)
	// ready is set once the handshake completed: closing a server that
	// never got that far kills it at once instead of waiting for it to
	// exit (a server stuck before initialize would hold dsh's exit up).
	ready atomic.Bool
	// sandbox finishes a server run under the kernel sandbox (nil: not
	// sandboxed).
	sandbox *sandboxEnd

	reapOnce sync.Once
	reaped   *reaper
}

// reaper waits for the server process exactly once, whoever asks first
// (closing the connection, or a failed handshake), and then finishes its
// sandbox.
type reaper struct {
	once sync.Once
	cmd  *exec.Cmd
	sb   *sandboxEnd
	done chan struct{}
	err  error
}

func (t *stdioTransport) reaper() *reaper {
	t.reapOnce.Do(func() { t.reaped = &reaper{cmd: t.cmd, sb: t.sandbox, done: make(chan struct{})} })
	return t.reaped
}

// reap starts waiting (once) and returns a channel closed when the
// process was reaped; err is then its Wait error.
func (r *reaper) reap() <-chan struct{} {
	r.once.Do(func() {
		go func() {
			r.err = r.cmd.Wait()
			r.sb.done()
			close(r.done)
		}()
	})
	return r.done
}

func (t *stdioTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		t.sandbox.done()
		return nil, err
	}
	if t.sandbox != nil {
		// The helper reports once every layer is in place; until then
		// the server has not run.
		if err := t.sandbox.pr.Started(); err != nil {
			killGroup(t.cmd.Process.Pid)
			<-t.reaper().reap()
			return nil, err
		}
	}
	r := &lineFilter{r: bufio.NewReaderSize(stdout, 64<<10), drop: t.dropped}
	inner, err := (&sdk.IOTransport{
		// Closing the connection closes stdin, not stdout.
		Reader: io.NopCloser(r),
		Writer: &procStdin{cmd: t.cmd, stdin: stdin, terminate: t.terminate, ready: &t.ready, reaper: t.reaper()},
	}).Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &watchedConn{Connection: inner, ended: t.ended}, nil
}

// dropped logs the first line dropped from a connection (later ones at
// debug level) and keeps every one in the stderr tail for error messages.
func (t *stdioTransport) dropped(n int, line []byte) {
	const show = 200
	text := string(line)
	if len(text) > show {
		text = truncateUTF8(text, show) + "…"
	}
	if n == 1 {
		t.logger.Warn("mcp: ignoring stdout output that is not JSON-RPC (the server should log to stderr)", "line", text)
		if t.warn != nil {
			t.warn(text)
		}
	} else {
		t.logger.Debug("mcp: ignoring stdout output that is not JSON-RPC", "line", text, "count", n)
	}
	if t.stderr != nil {
		_, _ = t.stderr.Write([]byte("(stdout) " + text + "\n"))
	}
}

// watchedConn reports when reading ends: the SDK then ends the session
// and fails the calls in flight.
type watchedConn struct {
	sdk.Connection
	once  sync.Once
	ended func()
}

func (c *watchedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil && c.ended != nil {
		c.once.Do(c.ended)
	}
	return msg, err
}

// procStdin is the write side: closing it closes the server's stdin and
// waits for the process to exit, signalling it if it does not (the MCP
// stdio shutdown sequence, as the SDK's CommandTransport does it).
type procStdin struct {
	cmd       *exec.Cmd
	stdin     io.WriteCloser
	terminate time.Duration
	ready     *atomic.Bool
	reaper    *reaper
}

func (p *procStdin) Write(b []byte) (int, error) { return p.stdin.Write(b) }

func (p *procStdin) Close() error {
	if err := p.stdin.Close(); err != nil {
		return fmt.Errorf("closing stdin: %v", err)
	}
	if p.ready != nil && !p.ready.Load() {
		// It never answered initialize: nothing to shut down gracefully.
		killGroup(p.cmd.Process.Pid)
	}
	done := p.reaper.reap()
	wait := func() (error, bool) {
		t := time.NewTimer(p.terminate)
		defer t.Stop()
		select {
		case <-done:
			return p.reaper.err, true
		case <-t.C:
			return nil, false
		}
	}
	if err, ok := wait(); ok {
		return err
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err == nil {
		if err, ok := wait(); ok {
			return err
		}
	}
	if err := p.cmd.Process.Kill(); err != nil {
		return err
	}
	if err, ok := wait(); ok {
		return err
	}
	return fmt.Errorf("the server process does not exit")
}

// lineFilter passes stdout through, except lines that start, outside any
// JSON value, with something that cannot begin a JSON-RPC message: only
// '{' (a message) or '[' followed by '{', '[' or ']' (a batch) can, after
// blanks. Other lines (banners, "[INFO] …" logs) are handed to drop with
// their count and left out. JSON values that span lines (pretty-printed
// messages) pass whole: the filter tracks nesting and strings.
type lineFilter struct {
	r    *bufio.Reader
	drop func(n int, line []byte)

	pending []byte // passed bytes not yet returned
	err     error  // read error to return once pending is drained

	state   filterState
	held    []byte // after a '[' at the start of a line: bytes held back
	dropped []byte // the start of the line being dropped, for drop
	count   int    // lines dropped so far

	depth   int  // JSON nesting depth
	inStr   bool // inside a JSON string
	escaped bool // after a backslash inside a string
	midLine bool // a JSON value or non-blank text began on this line
}

type filterState int

const (
	passing filterState = iota
	holding             // '[' at the start of a line: batch or log line?
	dropping
)

const maxDroppedShown = 1024

func (f *lineFilter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		if f.err != nil {
			if f.state == dropping {
				f.finishDrop()
			}
			return 0, f.err
		}
		chunk, err := f.r.ReadSlice('\n')
		if err != nil && err != bufio.ErrBufferFull {
			f.err = err
		}
		f.pending = f.filter(chunk)
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

func blank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// filter returns what of chunk passes: chunk itself when nothing is held
// back or dropped, else a new slice.
func (f *lineFilter) filter(chunk []byte) []byte {
	var out []byte
	start, copied := 0, false // start of the current run of passing bytes
	if f.state != passing {
		start, copied = -1, true
	}
	flush := func(end int) {
		if start >= 0 && end > start {
			out = append(out, chunk[start:end]...)
		}
		copied = true
		start = -1
	}
	for i := 0; i < len(chunk); i++ {
		c := chunk[i]
		switch f.state {
		case dropping:
			if c == '\n' {
				f.finishDrop()
				f.state, start = passing, i+1
			} else if len(f.dropped) < maxDroppedShown {
				f.dropped = append(f.dropped, c)
			}
			continue
		case holding:
			switch {
			case blank(c):
				f.held = append(f.held, c)
				continue
			case c == '{' || c == '[' || c == ']':
				out = append(out, f.held...)
				copied = true
				f.held = f.held[:0]
				f.state, start = passing, i
				f.depth = 1
			default:
				f.state = dropping
				f.dropped = append(append(f.dropped[:0], bytes.TrimLeft(f.held, " \t\r\n")...), c)
				f.held = f.held[:0]
				continue
			}
		case passing:
			if f.inStr && !f.escaped {
				// Skip to the string's next quote or backslash.
				j := bytes.IndexAny(chunk[i:], `"\\`)
				if j < 0 {
					i = len(chunk)
					continue
				}
				i += j
				c = chunk[i]
			}
			if !f.midLine && f.depth == 0 && !blank(c) {
				switch c {
				case '{':
				case '[':
					flush(i)
					f.state = holding
					f.held = append(f.held[:0], c)
					f.midLine = true
					continue
				default:
					flush(i)
					f.state = dropping
					f.dropped = append(f.dropped[:0], c)
					continue
				}
			}
		}
		if !blank(c) {
			f.midLine = true
		}
		f.scan(c)
		if c == '\n' && f.depth == 0 && !f.inStr {
			f.midLine = false
		}
	}
	if !copied {
		return chunk
	}
	flush(len(chunk))
	return out
}

func (f *lineFilter) finishDrop() {
	f.count++
	f.drop(f.count, bytes.TrimRight(f.dropped, " \t\r"))
	f.dropped = f.dropped[:0]
	f.midLine = false
}

// scan advances the JSON nesting state over one byte.
func (f *lineFilter) scan(c byte) {
	switch {
	case f.inStr:
		switch {
		case f.escaped:
			f.escaped = false
		case c == '\\':
			f.escaped = true
		case c == '"':
			f.inStr = false
		}
	case c == '"':
		f.inStr = true
	case c == '{' || c == '[':
		f.depth++
	case c == '}' || c == ']':
		if f.depth > 0 {
			f.depth--
		}
	}
}
