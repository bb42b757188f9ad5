package acp

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"unicode/utf8"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dshq/dsh/fs"
	"github.com/dshq/dsh/llm"
)

type fsProvider = fs.Provider

// callKey tags a tool call's context with the ACP session it serves.
type callKey struct{}

type callCtx struct {
	rec *sess
	id  llm.CallID
}

func callFrom(ctx context.Context) *callCtx {
	c, _ := ctx.Value(callKey{}).(*callCtx)
	return c
}

// clientFS routes the tools' file reads, writes and edits through the
// editor (fs/read_text_file, fs/write_text_file) when the client offers
// them, so the agent sees unsaved buffers and the editor sees its changes;
// anything else, and every failure to reach the editor for a read, falls
// back to the local provider.
//
// The exact text semantics (windows, line endings, BOM, edit matching) are
// the local provider's own: the editor's text is staged in a private
// temporary file and the local provider runs on it. Freshness checks use
// the file's version on disk, as the read-before-write policy records it.
type clientFS struct {
	inner fs.Provider
	srv   *Server
}

var _ fs.Provider = (*clientFS)(nil)

func (c *clientFS) Resolve(ctx context.Context, cwd, path string) (fs.Target, error) {
	return c.inner.Resolve(ctx, cwd, path)
}

func (c *clientFS) Stat(ctx context.Context, t fs.Target) (*fs.Info, error) {
	return c.inner.Stat(ctx, t)
}

func (c *clientFS) List(ctx context.Context, t fs.Target) ([]fs.DirEntry, error) {
	return c.inner.List(ctx, t)
}

// delegate returns the call's session when the client offers the method.
func (c *clientFS) delegate(ctx context.Context, write bool) *callCtx {
	cc := callFrom(ctx)
	if cc == nil {
		return nil
	}
	caps, _ := c.srv.clientCaps()
	if (write && !caps.Fs.WriteTextFile) || (!write && !caps.Fs.ReadTextFile) {
		return nil
	}
	return cc
}

// readClient reads a file's text from the editor.
func (c *clientFS) readClient(ctx context.Context, cc *callCtx, t fs.Target) (string, bool) {
	if caps, _ := c.srv.clientCaps(); !caps.Fs.ReadTextFile {
		return "", false
	}
	resp, err := c.srv.peer.ReadTextFile(ctx, sdk.ReadTextFileRequest{SessionId: sdk.SessionId(cc.rec.id), Path: t.Path})
	if err != nil {
		c.srv.log.Debug("acp: fs/read_text_file failed; reading from disk", "path", t.Path, "err", err)
		return "", false
	}
	return resp.Content, true
}

// stage writes text to a private temporary file.
func stage(text string) (string, func(), error) {
	f, err := os.CreateTemp("", "dsh-acp-*")
	if err != nil {
		return "", nil, err
	}
	name := f.Name()
	cleanup := func() { _ = os.Remove(name) }
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		cleanup()
		return "", nil, err
	}
	if err := f.Close(); err != nil {
		cleanup()
		return "", nil, err
	}
	return name, cleanup, nil
}

func (c *clientFS) ReadLines(ctx context.Context, t fs.Target, req fs.ReadRequest) (fs.Window, error) {
	cc := c.delegate(ctx, false)
	if cc == nil {
		return c.inner.ReadLines(ctx, t, req)
	}
	info, err := c.inner.Stat(ctx, t)
	if err != nil || info == nil || info.Type != fs.TypeFile {
		return c.inner.ReadLines(ctx, t, req) // the local provider words the error
	}
	text, ok := c.readClient(ctx, cc, t)
	if !ok {
		return c.inner.ReadLines(ctx, t, req)
	}
	tmp, cleanup, err := stage(text)
	if err != nil {
		return c.inner.ReadLines(ctx, t, req)
	}
	defer cleanup()
	w, err := c.inner.ReadLines(ctx, fs.Target{Key: tmp, Path: t.Path}, req)
	if err != nil {
		return fs.Window{}, err
	}
	w.Version = info.Version
	return w, nil
}

func (c *clientFS) Write(ctx context.Context, t fs.Target, content string, check fs.Precondition) (fs.WriteResult, error) {
	cc := c.delegate(ctx, true)
	if cc == nil {
		return c.inner.Write(ctx, t, content, check)
	}
	info, err := c.inner.Stat(ctx, t)
	if err != nil {
		return fs.WriteResult{}, err
	}
	if info != nil && info.Type != fs.TypeFile {
		return c.inner.Write(ctx, t, content, check)
	}
	var cur *fs.Version
	if info != nil {
		v := info.Version
		cur = &v
	}
	if check != nil {
		if err := check(cur); err != nil {
			return fs.WriteResult{}, err
		}
	}
	var before *string
	if info != nil {
		prev, ok := c.readClient(ctx, cc, t)
		if !ok {
			if b, err := os.ReadFile(t.Key); err == nil {
				prev, ok = string(b), true
			}
		}
		if ok && utf8.ValidString(prev) && !bytes.ContainsRune([]byte(prev), 0) {
			p := normalizeText(prev)
			before = &p
		}
	}
	if err := os.MkdirAll(filepath.Dir(t.Key), 0o755); err != nil {
		return fs.WriteResult{}, &fs.Error{Code: fs.CodeIO, Op: "write", Path: t.Path, Err: err,
			Message: fmt.Sprintf("cannot write %q: creating its directory: %v", t.Path, err)}
	}
	if _, err := c.srv.peer.WriteTextFile(ctx, sdk.WriteTextFileRequest{SessionId: sdk.SessionId(cc.rec.id), Path: t.Path, Content: content}); err != nil {
		return fs.WriteResult{}, &fs.Error{Code: fs.CodeIO, Op: "write", Path: t.Path, Err: err,
			Message: fmt.Sprintf("cannot write %q: the editor refused the write: %v", t.Path, err)}
	}
	res := fs.WriteResult{Created: info == nil, Before: before, After: normalizeText(content)}
	if after, err := c.inner.Stat(ctx, t); err == nil && after != nil {
		res.Version = after.Version
	}
	return res, nil
}

func (c *clientFS) Edit(ctx context.Context, t fs.Target, e fs.Edit, check fs.Precondition) (fs.EditResult, error) {
	cc := c.delegate(ctx, true)
	if cc == nil {
		return c.inner.Edit(ctx, t, e, check)
	}
	info, err := c.inner.Stat(ctx, t)
	if err != nil || info == nil || info.Type != fs.TypeFile {
		return c.inner.Edit(ctx, t, e, check) // the local provider words the error
	}
	if check != nil {
		v := info.Version
		if err := check(&v); err != nil {
			return fs.EditResult{}, err
		}
	}
	text, ok := c.readClient(ctx, cc, t)
	if !ok {
		b, err := os.ReadFile(t.Key)
		if err != nil {
			return c.inner.Edit(ctx, t, e, nil)
		}
		text = string(b)
	}
	tmp, cleanup, err := stage(text)
	if err != nil {
		return fs.EditResult{}, &fs.Error{Code: fs.CodeIO, Op: "edit", Path: t.Path, Err: err, Message: fmt.Sprintf("cannot edit %q: %v", t.Path, err)}
	}
	defer cleanup()
	res, err := c.inner.Edit(ctx, fs.Target{Key: tmp, Path: t.Path}, e, nil)
	if err != nil {
		return fs.EditResult{}, err
	}
	edited, err := os.ReadFile(tmp)
	if err != nil {
		return fs.EditResult{}, &fs.Error{Code: fs.CodeIO, Op: "edit", Path: t.Path, Err: err, Message: fmt.Sprintf("cannot edit %q: %v", t.Path, err)}
	}
	if _, err := c.srv.peer.WriteTextFile(ctx, sdk.WriteTextFileRequest{SessionId: sdk.SessionId(cc.rec.id), Path: t.Path, Content: string(edited)}); err != nil {
		return fs.EditResult{}, &fs.Error{Code: fs.CodeIO, Op: "edit", Path: t.Path, Err: err,
			Message: fmt.Sprintf("cannot edit %q: the editor refused the write: %v", t.Path, err)}
	}
	res.Version = fs.Version{}
	if after, err := c.inner.Stat(ctx, t); err == nil && after != nil {
		res.Version = after.Version
	}
	return res, nil
}

// normalizeText drops a byte-order mark and normalizes CRLF, as the local
// provider reports text for diffs.
func normalizeText(s string) string {
	if len(s) >= 3 && s[:3] == "\xEF\xBB\xBF" {
		s = s[3:]
	}
	return fs.NormalizeNewlines(s)
}
