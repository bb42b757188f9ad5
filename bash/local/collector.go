package local

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/dshq/dsh/bash"
)

// collector keeps one output stream: its last max bytes in a ring buffer (so
// memory stays bounded however much a command prints) and, from the moment
// the stream first outgrows the ring, the complete stream in a spill file.
// The spill file starts with the bytes the ring still held, so it is the whole
// stream, not just the part that no longer fit.
//
// It is written by one reader goroutine and read concurrently by Read and
// result collection, hence the mutex.
type collector struct {
	mu  sync.Mutex
	max int
	// data is the ring: while len(data) < max it is a plain prefix-free
	// append buffer (head == 0); once full, head is the oldest byte.
	data  []byte
	head  int
	total int64 // bytes ever written
	// dropped: bytes were evicted from the ring (the text is a tail).
	dropped bool
	final   bool // stream ended; no more writes

	openSpill func() (*os.File, error)
	spill     *os.File
	spillPath string
	spillErr  error // the spill file is incomplete; its path is withdrawn
}

func newCollector(max int, openSpill func() (*os.File, error)) *collector {
	return &collector{max: max, openSpill: openSpill}
}

// Write appends p. It never fails: a broken spill file withdraws the spill
// path but output keeps flowing into the ring.
func (c *collector) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	if n == 0 || c.final {
		return n, nil
	}
	c.total += int64(n)
	overflow := len(c.data)+n > c.max
	if (overflow || c.spill != nil) && c.spillErr == nil {
		c.spillLocked(p)
	}
	if !overflow {
		c.data = append(c.grow(len(c.data)+n), p...)
		return n, nil
	}
	c.dropped = true
	if n >= c.max {
		c.data = c.grow(c.max)[:c.max]
		copy(c.data, p[n-c.max:])
		c.head = 0
		return n, nil
	}
	if fill := c.max - len(c.data); fill > 0 { // first overflow: top up to a full ring
		c.data = append(c.grow(c.max), p[:fill]...)
		p = p[fill:]
	}
	for len(p) > 0 { // overwrite the oldest bytes
		k := copy(c.data[c.head:], p)
		p = p[k:]
		c.head = (c.head + k) % c.max
	}
	return n, nil
}

// grow returns c.data with capacity for need bytes, growing geometrically
// but never beyond max, so a quiet command costs little memory.
func (c *collector) grow(need int) []byte {
	if need <= cap(c.data) {
		return c.data
	}
	nc := max(2*cap(c.data), need, 512)
	nc = min(nc, c.max)
	d := make([]byte, len(c.data), nc)
	copy(d, c.data)
	return d
}

// spillLocked writes p to the spill file, creating it (and copying in the
// retained bytes) on first use.
func (c *collector) spillLocked(p []byte) {
	if c.spill == nil {
		if c.openSpill == nil {
			c.spillErr = errors.New("no spill directory")
			return
		}
		f, err := c.openSpill()
		if err != nil {
			c.spillErr = err
			return
		}
		c.spill, c.spillPath = f, f.Name()
		a, b := c.segments()
		if err := writeAll(f, a, b); err != nil {
			c.failSpillLocked(err)
			return
		}
	}
	if err := writeAll(c.spill, p); err != nil {
		c.failSpillLocked(err)
	}
}

func (c *collector) failSpillLocked(err error) {
	c.spillErr = err
	_ = c.spill.Close()
	c.spill = nil
}

func writeAll(f *os.File, bufs ...[]byte) error {
	for _, b := range bufs {
		if _, err := f.Write(b); err != nil {
			return fmt.Errorf("writing spill file: %w", err)
		}
	}
	return nil
}

// segments returns the retained bytes in order, as up to two slices of the
// ring.
func (c *collector) segments() (a, b []byte) {
	if len(c.data) < c.max || c.head == 0 {
		return c.data, nil
	}
	return c.data[c.head:], c.data[:c.head]
}

// bytesFrom returns the retained bytes from stream offset off on (off must be
// within the retained window).
func (c *collector) bytesFrom(off int64) []byte {
	a, b := c.segments()
	skip := int(off - (c.total - int64(len(c.data))))
	out := make([]byte, 0, len(c.data)-skip)
	if skip < len(a) {
		out = append(out, a[skip:]...)
		skip = 0
	} else {
		skip -= len(a)
	}
	return append(out, b[skip:]...)
}

// finish marks the end of the stream and closes the spill file. A close
// failure withdraws the path: a file that may be incomplete is not offered
// as "the full output".
func (c *collector) finish() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.final = true
	if c.spill != nil {
		if err := c.spill.Close(); err != nil && c.spillErr == nil {
			c.spillErr = err
		}
		c.spill = nil
	}
}

// spillPathLocked is the trustworthy spill path, or "".
func (c *collector) spillPathLocked() string {
	if c.spillErr != nil {
		return ""
	}
	return c.spillPath
}

// collected is the stream's outcome for a result: its text, or for output
// that is not text its size and a file holding all of it.
func (c *collector) collected() bash.CollectedOutput {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a, b := c.segments(); looksBinary(a, b) {
		return bash.CollectedOutput{Binary: true, Size: c.total, Truncated: c.dropped, SpillPath: c.keepLocked()}
	}
	text, truncated, spill := c.outputLocked()
	return bash.CollectedOutput{Text: text, Truncated: truncated, SpillPath: spill, Size: c.total}
}

// keepLocked makes sure a spill file holds the whole stream and returns its
// path ("" when it cannot be had). A stream that still fits in memory has no
// spill file yet: one is written from the ring, and kept open while the
// stream runs so later output goes to it too.
func (c *collector) keepLocked() string {
	if c.spill != nil || c.spillPath != "" || c.dropped {
		return c.spillPathLocked()
	}
	if c.spillErr != nil {
		return ""
	}
	if c.openSpill == nil {
		c.spillErr = errors.New("no spill directory")
		return ""
	}
	f, err := c.openSpill()
	if err != nil {
		c.spillErr = err
		return ""
	}
	c.spill, c.spillPath = f, f.Name()
	a, b := c.segments()
	if err := writeAll(f, a, b); err != nil {
		c.failSpillLocked(err)
		return ""
	}
	if c.final {
		if err := f.Close(); err != nil {
			c.spillErr = err
		}
		c.spill = nil
	}
	return c.spillPathLocked()
}

// looksBinary reports output that is not text: a NUL byte, or (in 64 bytes
// or more) more than one byte in ten that is neither valid UTF-8 nor a
// printing or formatting character (escape sequences, tabs and carriage
// returns are text). Only the first 8 KiB are looked at.
func looksBinary(a, b []byte) bool {
	const sample = 8 << 10
	buf := a
	if len(buf) < sample && len(b) > 0 {
		buf = append(append(make([]byte, 0, min(sample, len(a)+len(b))), a...), b[:min(len(b), sample-len(a))]...)
	}
	buf = buf[:min(len(buf), sample)]
	odd := 0
	for i := 0; i < len(buf); {
		r, n := utf8.DecodeRune(buf[i:])
		switch {
		case r == 0:
			return true
		case r == utf8.RuneError && n == 1:
			if !utf8.FullRune(buf[i:]) {
				i = len(buf) // a character cut by the sample's end is no evidence
				continue
			}
			odd++
		case r < 0x20 && r != '\t' && r != '\n' && r != '\r' && r != '\f' && r != '\v' && r != '\b' && r != 0x1b:
			odd++
		}
		i += n
	}
	// A few odd bytes in a short output (a Latin-1 "café") stay text.
	return len(buf) >= 64 && odd*10 > len(buf)
}

// output returns the collected stream.
func (c *collector) output() (text string, truncated bool, spillPath string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.outputLocked()
}

func (c *collector) outputLocked() (text string, truncated bool, spillPath string) {
	b := c.bytesFrom(c.total - int64(len(c.data)))
	if c.dropped {
		b = trimPartialHead(b)
	}
	return decode(b), c.dropped, c.spillPathLocked()
}

// readFrom returns the output from stream offset off on and the offset to
// continue from. When off has already been evicted from the ring the read is
// lossy and returns the whole retained tail. While the stream is still open a
// trailing incomplete UTF-8 sequence is held back for the next read, so
// deltas do not split characters.
//
// Binary output is not decoded: binary is then how many bytes arrived since
// off, text is empty, and the spill file holds the stream.
func (c *collector) readFrom(off int64) (text string, next int64, lossy bool, spillPath string, binary int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	start := c.total - int64(len(c.data))
	if off < start {
		off, lossy = start, true
	}
	b := c.bytesFrom(off)
	if len(b) > 0 && looksBinary(b, nil) {
		return "", c.total, lossy, c.keepLocked(), c.total - off
	}
	if lossy {
		b = trimPartialHead(b)
	}
	next = c.total
	if !c.final {
		if k := partialTail(b); k > 0 {
			b = b[:len(b)-k]
			next -= int64(k)
		}
	}
	return decode(b), next, lossy, c.spillPathLocked(), 0
}

// trimPartialHead drops continuation bytes at the start of a tail cut.
func trimPartialHead(b []byte) []byte {
	for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	return b
}

// partialTail reports how many trailing bytes form an incomplete (but so far
// valid-looking) UTF-8 sequence.
func partialTail(b []byte) int {
	for i := 1; i < utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return i
			}
			return 0
		}
	}
	return 0
}

// decode turns output bytes into text; invalid sequences become U+FFFD.
func decode(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
