package local

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/dshq/dsh/fs"
)

// Edit implements [fs.Provider]. The match runs on the file's text with
// CRLF normalized to LF (what a read window shows), and each match is mapped
// back to the original bytes, which are the only bytes replaced: lines the
// edit does not touch keep their exact line endings.
func (p *Provider) Edit(ctx context.Context, t fs.Target, e fs.Edit, check fs.Precondition) (fs.EditResult, error) {
	if err := ctx.Err(); err != nil {
		return fs.EditResult{}, aborted("edit", t.Path, err)
	}
	old, repl := fs.NormalizeNewlines(e.Old), fs.NormalizeNewlines(e.New)
	if old == "" {
		return fs.EditResult{}, fs.Errorf(fs.CodeEditNotFound, "edit", t.Path, "old_string must be a non-empty string")
	}
	if old == repl {
		return fs.EditResult{}, fs.Errorf(fs.CodeNoChange, "edit", t.Path,
			"old_string and new_string are the same (line endings are matched loosely, so an edit cannot change only them); nothing to change")
	}
	unlock := p.locks.lock(t.Key)
	defer unlock()

	f, err := openRead(t.Key)
	if err != nil {
		if absent(err) {
			return fs.EditResult{}, &fs.Error{Code: fs.CodeNotFound, Op: "edit", Path: t.Path, Err: err,
				Message: fmt.Sprintf("cannot edit %q: the file does not exist; use write to create it", t.Path)}
		}
		return fs.EditResult{}, ioError("edit", "edit", t.Path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fs.EditResult{}, ioError("edit", "edit", t.Path, err)
	}
	info := infoOf(fi)
	if info.Type != fs.TypeFile {
		return fs.EditResult{}, notRegular("edit", "edit", t.Path, info.Type)
	}
	if err := checkWritable(t.Key, fi); err != nil {
		return fs.EditResult{}, readOnly("edit", "edit", t.Path, err)
	}
	// The precondition comes before reading: a stale edit must say "stale",
	// not "not found" against content the caller has never seen.
	if check != nil {
		if err := check(&info.Version); err != nil {
			return fs.EditResult{}, err
		}
	}
	raw, err := p.readWhole(f, t.Path, info.Size)
	if err != nil {
		return fs.EditResult{}, err
	}
	body, hasBOM := raw, bytes.HasPrefix(raw, bom)
	if hasBOM {
		body = raw[len(bom):]
	}
	doc := newLineDoc(body)
	n := strings.Count(doc.norm, old)
	switch {
	case n == 0:
		return fs.EditResult{}, fs.Errorf(fs.CodeEditNotFound, "edit", t.Path, "old_string was not found in %q", t.Path)
	case n > 1 && !e.ReplaceAll:
		return fs.EditResult{}, fs.Errorf(fs.CodeAmbiguousEdit, "edit", t.Path,
			"old_string matched %d times in %q; provide a more specific old_string (include more surrounding lines) or set replace_all to true",
			n, t.Path)
	}
	ins := repl
	if doc.crlfStyle() {
		ins = strings.ReplaceAll(repl, "\n", "\r\n")
	}
	var out bytes.Buffer
	out.Grow(len(raw) + n*(len(ins)-len(old)))
	if hasBOM {
		out.Write(bom)
	}
	last, pos := 0, 0
	for range n {
		j := pos + strings.Index(doc.norm[pos:], old)
		out.Write(body[last:doc.orig(j)])
		out.WriteString(ins)
		pos = j + len(old)
		last = doc.orig(pos)
	}
	out.Write(body[last:])

	if err := ctx.Err(); err != nil {
		return fs.EditResult{}, aborted("edit", t.Path, err)
	}
	v, err := replaceFile(t.Key, out.Bytes(), fi, 0)
	if err != nil {
		return fs.EditResult{}, ioError("edit", "edit", t.Path, err)
	}
	return fs.EditResult{
		Replacements: n,
		Version:      v,
		Before:       doc.norm,
		After:        strings.ReplaceAll(doc.norm, old, repl),
	}, nil
}

// readWhole reads an edit's file, refusing what it must not rewrite as text.
func (p *Provider) readWhole(f io.Reader, path string, size int64) ([]byte, error) {
	tooLarge := func(size int64) error {
		return fs.Errorf(fs.CodeTooLarge, "edit", path,
			"cannot edit %q: the file is %s, over the %s edit limit; change large files with bash (e.g. sed)",
			path, sizeString(size), sizeString(p.maxSize))
	}
	if size > p.maxSize {
		return nil, tooLarge(size)
	}
	raw, err := io.ReadAll(io.LimitReader(f, p.maxSize+1))
	if err != nil {
		return nil, ioError("edit", "edit", path, err)
	}
	if int64(len(raw)) > p.maxSize { // it grew since the stat
		return nil, tooLarge(int64(len(raw)))
	}
	if bytes.IndexByte(raw, 0) >= 0 {
		return nil, fs.Errorf(fs.CodeNotText, "edit", path, "cannot edit %q: binary file (it contains NUL bytes)", path)
	}
	if !utf8.Valid(raw) {
		return nil, fs.Errorf(fs.CodeNotText, "edit", path,
			"cannot edit %q: invalid UTF-8 text; edit changes UTF-8 text only (use bash for other encodings)", path)
	}
	return raw, nil
}

// lineDoc is a file's text with CRLF normalized to LF, plus what is needed to
// map positions in the normalized text back to the original bytes.
type lineDoc struct {
	norm string
	// crlf holds, in increasing order, the normalized positions of the "\n"s
	// that stand for "\r\n" in the original.
	crlf []int
}

func newLineDoc(b []byte) lineDoc {
	var d lineDoc
	var sb strings.Builder
	sb.Grow(len(b))
	last := 0
	for {
		k := bytes.Index(b[last:], []byte("\r\n"))
		if k < 0 {
			break
		}
		sb.Write(b[last : last+k])
		d.crlf = append(d.crlf, sb.Len())
		sb.WriteByte('\n')
		last += k + 2
	}
	sb.Write(b[last:])
	d.norm = sb.String()
	return d
}

// orig maps a normalized position to the original one: every CRLF before it
// added one byte. A position at a normalized "\n" maps to its "\r", so a
// match starting or ending at a line break covers the whole "\r\n".
func (d lineDoc) orig(n int) int { return n + sort.SearchInts(d.crlf, n) }

// crlfStyle reports whether CRLF is the file's dominant line ending (ties go
// to LF), which is how inserted text is written.
func (d lineDoc) crlfStyle() bool {
	lf := strings.Count(d.norm, "\n") - len(d.crlf)
	return len(d.crlf) > lf
}
