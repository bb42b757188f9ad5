package search

import (
	"bytes"
	"context"
	"io"
	"runtime/debug"
	"sort"
	"sync"
)

// grepNative is the Go backend: the calling goroutine walks the tree
// (directory reads are cheap and must see parents before children) and a
// bounded pool of workers opens, reads and searches the files it finds.
// Every worker has exited when it returns.
func (s *Searcher) grepNative(ctx context.Context, t *tree, pat *pattern, opts *GrepOptions, col *collector) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan child, 256)
	var wg sync.WaitGroup
	for range s.workers() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for c := range jobs {
				if ctx.Err() != nil {
					continue // drain so the walker never blocks
				}
				if fm, ok := searchFile(c.abs, c.rel, pat, opts, &buf); ok {
					col.add(fm)
				}
			}
		}()
	}
	err := t.walk(ctx, nil, func(c child) bool {
		if !c.typ.IsRegular() {
			return true // symbolic links, devices, sockets: not searched
		}
		select {
		case jobs <- c:
			return true
		case <-ctx.Done():
			return false
		}
	})
	close(jobs)
	wg.Wait()
	return err
}

const (
	// readChunk is the first read's size: most source files fit, so a file
	// usually costs open, read, read (EOF), close — no stat.
	readChunk = 64 << 10
	// mmapThreshold: files at least this large are memory-mapped rather
	// than read, so a huge file never lands on the heap.
	mmapThreshold = 8 << 20
	// maxKeptBuffer is the largest read buffer a worker keeps between files.
	maxKeptBuffer = 1 << 20
)

// searchFile searches one regular file. It reports false for files without
// a match, binary files, files over the size limit and unreadable files.
// buf, when not nil, is a reusable read buffer.
func searchFile(abs, rel string, pat *pattern, opts *GrepOptions, buf *[]byte) (FileMatches, bool) {
	f, err := openFile(abs)
	if err != nil {
		return FileMatches{}, false
	}
	defer f.Close()
	var local []byte
	if buf == nil {
		buf = &local
	}
	if cap(*buf) < readChunk {
		*buf = make([]byte, 0, readChunk)
	}
	data := (*buf)[:readChunk]
	n, err := io.ReadFull(f, data)
	data = data[:n]
	switch err {
	case io.ErrUnexpectedEOF, io.EOF:
		// The whole file is in data.
	case nil:
		// A large file: learn its size before reading on.
		size, regular, err := f.size()
		if err != nil || !regular {
			return FileMatches{}, false
		}
		if opts.MaxFileSize > 0 && size > opts.MaxFileSize {
			return FileMatches{}, false
		}
		if size >= mmapThreshold {
			if m, unmap, err := mapFile(f, size); err == nil {
				defer unmap()
				return searchMapped(rel, m, pat, opts)
			}
		}
		if data, err = readRest(f, data, size); err != nil {
			return FileMatches{}, false
		}
		if cap(data) <= maxKeptBuffer {
			*buf = data[:0]
		}
	default:
		return FileMatches{}, false
	}
	if opts.MaxFileSize > 0 && int64(len(data)) > opts.MaxFileSize {
		return FileMatches{}, false
	}
	return searchData(rel, data, pat, opts)
}

// searchMapped searches a memory-mapped file. If the file shrinks while
// mapped, touching the lost pages faults; the fault becomes a panic on this
// goroutine, recovered here, and the file counts as unreadable.
func searchMapped(rel string, data []byte, pat *pattern, opts *GrepOptions) (fm FileMatches, ok bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if _, fault := r.(interface{ Addr() uintptr }); !fault {
				panic(r)
			}
			fm, ok = FileMatches{}, false
		}
	}()
	return searchData(rel, data, pat, opts)
}

// readRest reads f to EOF after the bytes already in data, expecting about
// size bytes in all.
func readRest(f io.Reader, data []byte, size int64) ([]byte, error) {
	if int64(cap(data)) < size+512 {
		grown := make([]byte, len(data), size+512) // +512: the file may grow
		copy(grown, data)
		data = grown
	}
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// searchData searches a file's contents.
func searchData(rel string, data []byte, pat *pattern, opts *GrepOptions) (FileMatches, bool) {
	text, err := decodeText(data)
	if err != nil || len(text) == 0 {
		return FileMatches{}, false
	}
	// Every mode counts every matching line: rg is asked for counts even
	// when only paths are wanted (see rgArgs), and the totals must agree.
	var lines []lineSpan
	if pat.multiline {
		lines = matchMultiline(text, pat)
	} else {
		lines = matchLines(text, pat)
	}
	if len(lines) == 0 {
		return FileMatches{}, false
	}
	fm := FileMatches{Path: rel, Count: len(lines)}
	if opts.Mode == Content {
		fm.Lines = withContext(text, lines, opts.Before, opts.After)
	}
	return fm, true
}

// lineSpan is a matching line: its number and byte range (without "\n").
type lineSpan struct {
	num        int
	start, end int
}

// matchLines finds the lines matching a line-local pattern. The pattern
// cannot match a line break, so a search of the whole remaining text finds
// the next matching line directly; then the search resumes at the line
// after it.
func matchLines(text []byte, pat *pattern) []lineSpan {
	if len(pat.literal) > 0 {
		return matchLinesLiteral(text, pat)
	}
	var out []lineSpan
	pos, num, counted := 0, 1, 0
	for pos < len(text) {
		loc := pat.re.FindIndex(text[pos:])
		if loc == nil {
			break
		}
		at := pos + loc[0]
		if at == len(text) && text[len(text)-1] == '\n' {
			break // the empty "line" after the final line break is not a line
		}
		start := pos
		if i := bytes.LastIndexByte(text[pos:at], '\n'); i >= 0 {
			start = pos + i + 1
		}
		end := len(text)
		if i := bytes.IndexByte(text[at:], '\n'); i >= 0 {
			end = at + i
		}
		num += bytes.Count(text[counted:start], []byte{'\n'})
		counted = start
		out = append(out, lineSpan{num: num, start: start, end: end})
		pos = end + 1
	}
	return out
}

// matchLinesLiteral finds candidate lines by the pattern's required
// literal and keeps those the regexp matches. A line-local pattern matches
// a line alone exactly as it does in place: "^", "$" and "\b" see the same
// edges, since the neighbours in the file are line breaks.
func matchLinesLiteral(text []byte, pat *pattern) []lineSpan {
	var out []lineSpan
	pos, num, counted := 0, 1, 0
	for pos < len(text) {
		i := bytes.Index(text[pos:], pat.literal)
		if i < 0 {
			break
		}
		at := pos + i
		start := pos
		if j := bytes.LastIndexByte(text[pos:at], '\n'); j >= 0 {
			start = pos + j + 1
		}
		end := len(text)
		if j := bytes.IndexByte(text[at:], '\n'); j >= 0 {
			end = at + j
		}
		if pat.re.Match(text[start:end]) {
			num += bytes.Count(text[counted:start], []byte{'\n'})
			counted = start
			out = append(out, lineSpan{num: num, start: start, end: end})
		}
		pos = end + 1
	}
	return out
}

// matchMultiline finds the lines covered by matches that may span lines:
// every line a match touches is a matching line.
func matchMultiline(text []byte, pat *pattern) []lineSpan {
	locs := pat.re.FindAllIndex(text, -1)
	if len(locs) == 0 {
		return nil
	}
	starts := lineStarts(text)
	var out []lineSpan
	last := 0 // highest line number emitted
	for _, loc := range locs {
		s, e := loc[0], loc[1]
		if s == len(text) && text[len(text)-1] == '\n' {
			continue
		}
		if e > s {
			e-- // the last byte of the match
		}
		from, to := lineOf(starts, s), lineOf(starts, e)
		for l := max(from, last+1); l <= to; l++ {
			out = append(out, spanOf(text, starts, l))
			last = l
		}
	}
	return out
}

// lineStarts returns the byte offset of each line's start.
func lineStarts(text []byte) []int {
	starts := []int{0}
	for off := 0; ; {
		i := bytes.IndexByte(text[off:], '\n')
		if i < 0 || off+i+1 == len(text) {
			return starts
		}
		off += i + 1
		starts = append(starts, off)
	}
}

// lineOf returns the 1-based line holding byte offset off.
func lineOf(starts []int, off int) int {
	return sort.Search(len(starts), func(i int) bool { return starts[i] > off })
}

func spanOf(text []byte, starts []int, num int) lineSpan {
	start := starts[num-1]
	end := len(text)
	if num < len(starts) {
		end = starts[num] - 1
	} else if end > start && text[end-1] == '\n' {
		end--
	}
	return lineSpan{num: num, start: start, end: end}
}

// withContext renders matching lines plus up to before/after context lines
// around each, each line once, in order.
func withContext(text []byte, matches []lineSpan, before, after int) []Line {
	if before == 0 && after == 0 {
		out := make([]Line, len(matches))
		for i, m := range matches {
			out[i] = Line{Number: m.num, Text: string(text[m.start:m.end])}
		}
		return out
	}
	starts := lineStarts(text)
	total := len(starts)
	isMatch := make(map[int]bool, len(matches))
	for _, m := range matches {
		isMatch[m.num] = true
	}
	var out []Line
	next := 1 // first line not yet emitted
	for _, m := range matches {
		from := max(m.num-before, next)
		to := min(m.num+after, total)
		for l := from; l <= to; l++ {
			sp := spanOf(text, starts, l)
			out = append(out, Line{Number: l, Text: string(text[sp.start:sp.end]), Context: !isMatch[l]})
		}
		next = max(next, to+1)
	}
	return out
}
