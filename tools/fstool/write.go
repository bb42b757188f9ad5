package fstool

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"strings"

	"github.com/dshq/dsh/tool"
)

//go:embed write.md
var writeDescription string

type writeTool struct {
	e    *env
	info tool.Info
}

func newWrite(e *env) *writeTool {
	const schema = `{"type":"object","properties":{` +
		`"file_path":{"type":"string","description":"Path of the file to create or replace: absolute, or relative to the working directory."},` +
		`"content":{"type":"string","description":"The complete new content of the file."}` +
		`},"required":["file_path","content"]}`
	return &writeTool{e: e, info: tool.Info{
		Name:        "write",
		Description: e.describe(writeDescription),
		Parameters:  json.RawMessage(schema),
		Kind:        tool.KindEdit,
	}}
}

func (t *writeTool) Info() tool.Info { return t.info }

type writeArgs struct {
	FilePath *string `json:"file_path"`
	Content  *string `json:"content"`
}

func (t *writeTool) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	a, err := tool.DecodeArgs[writeArgs](call)
	if err != nil {
		return tool.Result{}, err
	}
	switch {
	case a.FilePath == nil:
		return tool.Result{}, missing(t.info.Name, "file_path")
	case a.Content == nil:
		return tool.Result{}, missing(t.info.Name, "content")
	case strings.TrimSpace(*a.FilePath) == "":
		return tool.Result{}, errors.New("file_path must be a non-empty string")
	}
	tg, err := t.e.resolve(ctx, call, *a.FilePath)
	if err != nil {
		return tool.Result{}, err
	}
	pre, err := t.e.confirmChange(ctx, call, tg)
	if err != nil {
		return tool.Result{}, err
	}
	res, err := t.e.p.Write(ctx, tg, *a.Content, pre)
	if err != nil {
		return tool.Result{}, err
	}
	t.e.observe(call, tg, res.Version)
	m := meta{Operation: "update"}
	verb := "Updated"
	if res.Created {
		m.Operation, verb = "create", "Created"
	}
	if res.Before != nil {
		m.Diffs, m.Unified = fileDiffs(*a.FilePath, *res.Before, res.After)
	}
	return tool.Result{
		Content: tool.TextResult(envelope(tg.Path, verb+" file")).Content,
		Meta:    encodeMeta(m),
	}, nil
}

// Precheck implements [tool.Prechecker]: a write the read-before-write
// policy refuses is refused before anyone is asked to approve it.
func (t *writeTool) Precheck(ctx context.Context, call tool.Call) error {
	a, ok := decodeWrite(call.Args)
	if !ok {
		return nil
	}
	return t.e.precheckChange(ctx, call, *a.FilePath, false)
}

// PresentCall implements [tool.CallPresenter]: the whole content as a new
// file, since the previous content is not known before the call runs.
func (t *writeTool) PresentCall(args json.RawMessage) *tool.View {
	a, ok := decodeWrite(args)
	if !ok {
		return nil
	}
	return &tool.View{
		Title:     "Write " + *a.FilePath,
		Kind:      tool.KindEdit,
		Diffs:     []tool.FileDiff{{Path: *a.FilePath, NewText: *a.Content}},
		Locations: []tool.Location{{Path: *a.FilePath}},
	}
}

// PresentResult implements [tool.ResultPresenter]: the applied hunks, or the
// whole content when there are none (a new file, an identical overwrite, a
// previous file that was not text). A successful write always renders as a
// diff, so the card never degrades to the model-facing text.
func (t *writeTool) PresentResult(args json.RawMessage, res tool.Result) *tool.View {
	if res.IsError {
		return nil
	}
	a, ok := decodeWrite(args)
	if !ok {
		return nil
	}
	diffs := diffsFromMeta(res.Meta)
	if diffs == nil {
		diffs = []tool.FileDiff{{Path: *a.FilePath, NewText: *a.Content}}
	}
	return &tool.View{Title: "Write " + *a.FilePath, Kind: tool.KindEdit, Diffs: diffs}
}

func decodeWrite(args json.RawMessage) (writeArgs, bool) {
	var a writeArgs
	if json.Unmarshal(args, &a) != nil || a.FilePath == nil || a.Content == nil || strings.TrimSpace(*a.FilePath) == "" {
		return a, false
	}
	return a, true
}

var (
	_ tool.Tool            = (*writeTool)(nil)
	_ tool.CallPresenter   = (*writeTool)(nil)
	_ tool.ResultPresenter = (*writeTool)(nil)
)
