package local

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/dshq/dsh/fs"
)

const (
	// readBuffer is the streaming buffer: large enough that skipping lines
	// is dominated by the vectorized newline search, small enough not to
	// matter per call.
	readBuffer = 256 << 10
	// checkEvery is how many bytes are scanned between context checks.
	checkEvery = 8 << 20
)

var bom = []byte{0xEF, 0xBB, 0xBF}

// ReadLines implements [fs.Provider]. It streams the file through a fixed
// buffer: lines before the window are counted without being copied, window
// lines are kept up to MaxLineLength characters, and the scan stops when the
// window is full unless the file is small enough (CountLimit) to count the
// rest.
func (p *Provider) ReadLines(ctx context.Context, t fs.Target, req fs.ReadRequest) (fs.Window, error) {
	if err := ctx.Err(); err != nil {
		return fs.Window{}, aborted("read", t.Path, err)
	}
	f, err := openRead(t.Key)
	if err != nil {
		return fs.Window{}, ioError("read", "read", t.Path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fs.Window{}, ioError("read", "read", t.Path, err)
	}
	info := infoOf(fi)
	if info.Type != fs.TypeFile {
		return fs.Window{}, notRegular("read", "read", t.Path, info.Type)
	}
	r := readers.Get().(*bufio.Reader)
	r.Reset(f)
	defer func() {
		r.Reset(nil) // drop the file
		readers.Put(r)
	}()
	s := &lineScanner{
		ctx: ctx, path: t.Path, req: req, r: r,
		w: fs.Window{Size: info.Size, Version: info.Version, ID: info.ID},
	}
	if err := s.run(); err != nil {
		return fs.Window{}, err
	}
	return s.w, nil
}

// readers recycles stream buffers: concurrent reads of large files would
// otherwise allocate (and the GC reclaim) a buffer each.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBuffer) }}

// lineScanner is the state of one ReadLines scan.
type lineScanner struct {
	ctx  context.Context
	path string
	req  fs.ReadRequest
	r    *bufio.Reader
	w    fs.Window

	line    []byte // kept bytes of the current line (window lines only)
	over    bool   // the current line had more bytes than are kept
	pending bool   // the current line has at least one byte
	used    int    // window bytes so far
	scanned int    // bytes since the last context check
}

func (s *lineScanner) run() error {
	head, err := s.r.Peek(binarySniff)
	if err != nil && !errors.Is(err, io.EOF) {
		return ioError("read", "read", s.path, err)
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return fs.Errorf(fs.CodeNotText, "read", s.path,
			"cannot read %q: binary file (it contains NUL bytes), not shown as text", s.path)
	}
	if bytes.HasPrefix(head, bom) {
		_, _ = s.r.Discard(len(bom))
		s.w.BOM = true
	}
	offset := max(s.req.Offset, 1)
	limit := s.req.Limit
	if limit <= 0 {
		limit = math.MaxInt
	}
	// Room for the window up front (a window has at most one line per byte).
	s.w.Lines = make([]fs.Line, 0, min(int64(limit), s.w.Size+1, 4096))
	if err := s.skip(offset - 1); err != nil {
		return err
	}
	keep := 0
	if s.req.MaxLineLength > 0 {
		keep = s.req.MaxLineLength*utf8.UTFMax + utf8.UTFMax
	}
	for {
		chunk, err := s.r.ReadSlice('\n')
		if err := s.tick(len(chunk)); err != nil {
			return err
		}
		body := chunk
		if err == nil {
			body = body[:len(body)-1]
		}
		if len(chunk) > 0 {
			s.pending = true
		}
		switch {
		case keep == 0 || len(s.line)+len(body) <= keep:
			s.line = append(s.line, body...)
		default:
			s.line = append(s.line, body[:keep-len(s.line)]...)
			s.over = true
		}
		switch {
		case err == nil || (errors.Is(err, io.EOF) && s.pending):
			if !s.emit() {
				s.w.Capped, s.w.More = true, true
				return nil
			}
			if errors.Is(err, io.EOF) {
				s.w.Complete = true
				return nil
			}
			if len(s.w.Lines) == limit {
				return s.rest()
			}
		case errors.Is(err, io.EOF):
			s.w.Complete = true
			return nil
		case errors.Is(err, bufio.ErrBufferFull):
			// A long line: keep reading it.
		default:
			return ioError("read", "read", s.path, err)
		}
	}
}

// tick accounts for n scanned bytes and checks the context now and then.
func (s *lineScanner) tick(n int) error {
	s.scanned += n
	if s.scanned >= checkEvery {
		s.scanned = 0
		if err := s.ctx.Err(); err != nil {
			return aborted("read", s.path, err)
		}
	}
	return nil
}

// skip counts and discards n lines without copying them, searching whole
// buffers for newlines at a time.
func (s *lineScanner) skip(n int) error {
	for n > 0 {
		buf, err := s.r.Peek(readBuffer)
		if len(buf) == 0 {
			if err != nil && !errors.Is(err, io.EOF) {
				return ioError("read", "read", s.path, err)
			}
			if s.pending { // a final line without newline
				s.w.TotalLines++
				s.pending = false
			}
			return nil
		}
		if err := s.tick(len(buf)); err != nil {
			return err
		}
		if c := bytes.Count(buf, []byte{'\n'}); c < n {
			s.w.TotalLines += c
			n -= c
			s.pending = buf[len(buf)-1] != '\n'
			_, _ = s.r.Discard(len(buf))
			continue
		}
		at := 0
		for ; n > 0; n-- {
			at += bytes.IndexByte(buf[at:], '\n') + 1
			s.w.TotalLines++
		}
		s.pending = false
		_, _ = s.r.Discard(at)
	}
	return nil
}

// emit finishes the current line and adds it to the window. It returns false
// when the line does not fit MaxBytes (the scan must stop).
func (s *lineScanner) emit() bool {
	line := s.line
	if !s.over && len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	truncated := s.over
	if n := s.req.MaxLineLength; n > 0 && len(line) > n {
		i := 0
		for c := 0; c < n && i < len(line); c++ {
			_, size := utf8.DecodeRune(line[i:])
			i += size
		}
		if i < len(line) {
			line, truncated = line[:i], true
		}
	}
	text := string(line)
	invalid := !utf8.ValidString(text)
	if invalid {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	s.w.TotalLines++
	cost := len(text)
	if len(s.w.Lines) > 0 {
		cost++
	}
	if s.req.MaxBytes > 0 && len(s.w.Lines) > 0 && s.used+cost > s.req.MaxBytes {
		return false
	}
	s.used += cost
	s.w.InvalidUTF8 = s.w.InvalidUTF8 || invalid
	s.w.Lines = append(s.w.Lines, fs.Line{Number: s.w.TotalLines, Text: text, Truncated: truncated})
	s.line, s.over, s.pending = s.line[:0], false, false
	return true
}

// rest runs after the window is full: it counts the remaining lines when the
// file is small enough, and otherwise only checks whether any follow.
func (s *lineScanner) rest() error {
	if s.w.Size > s.req.CountLimit {
		if _, err := s.r.Peek(1); err == nil {
			s.w.More = true
		} else {
			s.w.Complete = true
		}
		return nil
	}
	last := s.w.TotalLines
	if err := s.skip(math.MaxInt); err != nil {
		return err
	}
	s.w.Complete = true
	s.w.More = s.w.TotalLines > last
	return nil
}
