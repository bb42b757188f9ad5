package search

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

// maxRgPattern keeps the translated pattern well inside the kernel's limit
// on one argument (128 KiB); longer patterns go to the Go walker.
const maxRgPattern = 100_000

// rgArgs builds the rg command line. Every flag that changes which files
// are searched or how a line matches is pinned, so the user's rg config and
// environment cannot make rg disagree with the Go walker.
func rgArgs(root string, pat *pattern, opts *GrepOptions) []string {
	args := []string{
		"--no-config",         // ignore RIPGREP_CONFIG_PATH
		"--no-messages",       // unreadable files are skipped silently, as in Go
		"--no-require-git",    // .gitignore applies outside repositories too
		"--no-ignore-exclude", // .git/info/exclude: not part of the tree's rules
		"--no-ignore-global",  // core.excludesFile: the user's, not the tree's
		"--null", "--no-heading", "--with-filename", "--color=never",
	}
	if opts.MaxFileSize > 0 {
		args = append(args, "--max-filesize="+strconv.FormatInt(opts.MaxFileSize, 10))
	}
	if opts.Hidden {
		args = append(args, "--hidden")
	}
	for _, g := range rgGlobs(opts.Include, opts.Exclude) {
		args = append(args, "--glob="+g)
	}
	// Last, so they win over any include.
	for _, name := range sortedVCSDirs() {
		args = append(args, "--glob=!"+name)
	}
	if pat.multiline {
		args = append(args, "--multiline")
	}
	if opts.Mode == Content || pat.multiline {
		// Multiline counts are derived from the lines: rg --count in
		// multiline mode counts something else (matches, merged oddly).
		args = append(args, "--line-number")
		if opts.Before > 0 {
			args = append(args, "--before-context="+strconv.Itoa(opts.Before))
		}
		if opts.After > 0 {
			args = append(args, "--after-context="+strconv.Itoa(opts.After))
		}
	} else {
		// Paths too come from --count rather than --files-with-matches:
		// with -l rg stops at the first match and never sees a NUL further
		// on, while counting reads the whole file and drops binary ones.
		args = append(args, "--count")
	}
	return append(args, "--regexp="+pat.rust, "--", root)
}

func sortedVCSDirs() []string {
	names := make([]string, 0, len(vcsDirs))
	for n := range vcsDirs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// runRipgrep runs rg over the directory root (canonical, absolute) and feeds
// the collector.
func runRipgrep(ctx context.Context, rg, root string, pat *pattern, opts *GrepOptions, col *collector) error {
	if len(pat.rust) > maxRgPattern {
		return errorf("pattern too long for ripgrep")
	}
	cmd := exec.CommandContext(ctx, rg, rgArgs(root, pat, opts)...)
	cmd.Dir = root // rg reads -g globs relative to its working directory
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return errorf("ripgrep: %w", err)
	}
	var stderr limitedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return errorf("starting ripgrep: %w", err)
	}
	p := rgParser{prefix: strings.TrimSuffix(root, "/") + "/", col: col, opts: opts, lines: opts.Mode == Content || pat.multiline}
	perr := p.parse(stdout)
	if perr != nil {
		// Stop rg and drain so Wait does not block on a full pipe.
		_ = cmd.Process.Kill()
		_, _ = io.Copy(io.Discard, stdout)
	}
	werr := cmd.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if perr != nil {
		return errorf("reading ripgrep output: %w", perr)
	}
	var exit *exec.ExitError
	switch {
	case werr == nil:
	case errors.As(werr, &exit) && exit.ExitCode() == 1: // no match
	case errors.As(werr, &exit) && exit.ExitCode() == 2 && stderr.Len() == 0:
		// Some file could not be read (messages are off); the rest of the
		// output stands, as with the Go walker, which skips such files.
	default:
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			return errorf("ripgrep: %w", werr)
		}
		return errorf("ripgrep: %w: %s", werr, msg)
	}
	return nil
}

// rgParser reads rg's --null --no-heading output:
//
//	path NUL count                 (--count)
//	path NUL line ":" text         (matching line)
//	path NUL line "-" text         (context line)
//	"--"                           (context group separator)
//	path ": WARNING: stopped searching binary file after match …"
//
// rg prints each file's lines together (it buffers per file when searching
// in parallel), so a file is complete when the next one starts. A file rg
// stopped reading because of a NUL byte is dropped: the Go walker skips
// binary files whole, wherever the NUL is.
type rgParser struct {
	prefix string
	col    *collector
	opts   *GrepOptions
	lines  bool // line output (content or multiline) rather than counts

	cur     *FileMatches
	curPath []byte
	dropped bool
	// partial holds the start of a path that contains a line break: rg
	// prints paths raw, so such a path spans output lines.
	partial []byte
}

var binaryWarning = []byte(": WARNING: stopped searching binary file")

func (p *rgParser) parse(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, line...)
			continue
		}
		if long != nil {
			line = append(long, line...)
			long = nil
		}
		if len(line) > 0 {
			p.line(bytes.TrimSuffix(line, []byte{'\n'}))
		}
		if err == io.EOF {
			p.flush()
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (p *rgParser) line(line []byte) {
	if p.partial != nil {
		line = append(append(p.partial, '\n'), line...)
		p.partial = nil
	}
	nul := bytes.IndexByte(line, 0)
	if nul < 0 {
		switch i := bytes.LastIndex(line, binaryWarning); {
		case i >= 0:
			if p.cur != nil && bytes.Equal(line[:i], p.curPath) {
				p.dropped = true
			}
		case string(line) == "--":
		default:
			p.partial = append([]byte(nil), line...)
		}
		return
	}
	path, rest := line[:nul], line[nul+1:]
	if !p.lines {
		n, err := strconv.Atoi(string(rest))
		if err == nil && n > 0 {
			p.col.add(FileMatches{Path: p.rel(path), Count: n})
		}
		return
	}
	if p.cur == nil || !bytes.Equal(path, p.curPath) {
		p.flush()
		p.cur = &FileMatches{Path: p.rel(path)}
		p.curPath = append(p.curPath[:0], path...)
	}
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	if i == 0 || i == len(rest) || (rest[i] != ':' && rest[i] != '-') {
		return
	}
	num, _ := strconv.Atoi(string(rest[:i]))
	ln := Line{Number: num, Text: string(rest[i+1:]), Context: rest[i] == '-'}
	if !ln.Context {
		p.cur.Count++
	}
	p.cur.Lines = append(p.cur.Lines, ln)
}

func (p *rgParser) flush() {
	fm, dropped := p.cur, p.dropped
	p.cur, p.dropped = nil, false
	if fm == nil || dropped || fm.Count == 0 {
		return
	}
	if p.opts.Mode != Content {
		fm.Lines = nil
	}
	p.col.add(*fm)
}

func (p *rgParser) rel(path []byte) string {
	return strings.TrimPrefix(string(path), p.prefix)
}

// limitedBuffer keeps the first 4 KiB written to it (rg's stderr).
type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := 4096 - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
