package fstool

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/dshq/dsh/fs"
	"github.com/dshq/dsh/tool"
)

//go:embed edit.md
var editDescription string

type editTool struct {
	e    *env
	info tool.Info
}

func newEdit(e *env) *editTool {
	const schema = `{"type":"object","properties":{` +
		`"file_path":{"type":"string","description":"Path of the file to edit: absolute, or relative to the working directory."},` +
		`"old_string":{"type":"string","description":"The exact text to replace, copied from the file without line-number prefixes."},` +
		`"new_string":{"type":"string","description":"The text to put in its place (empty to delete)."},` +
		`"replace_all":{"type":"boolean","description":"Replace every occurrence of old_string. Default false: old_string must occur exactly once."}` +
		`},"required":["file_path","old_string","new_string"]}`
	return &editTool{e: e, info: tool.Info{
		Name:        "edit",
		Description: e.describe(editDescription),
		Parameters:  json.RawMessage(schema),
		Kind:        tool.KindEdit,
	}}
}

func (t *editTool) Info() tool.Info { return t.info }

type editArgs struct {
	FilePath   *string `json:"file_path"`
	OldString  *string `json:"old_string"`
	NewString  *string `json:"new_string"`
	ReplaceAll *bool   `json:"replace_all"`
}

func (t *editTool) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	a, err := tool.DecodeArgs[editArgs](call)
	if err != nil {
		return tool.Result{}, err
	}
	switch {
	case a.FilePath == nil:
		return tool.Result{}, missing(t.info.Name, "file_path")
	case a.OldString == nil:
		return tool.Result{}, missing(t.info.Name, "old_string")
	case a.NewString == nil:
		return tool.Result{}, missing(t.info.Name, "new_string")
	case strings.TrimSpace(*a.FilePath) == "":
		return tool.Result{}, errors.New("file_path must be a non-empty string")
	case *a.OldString == "":
		return tool.Result{}, errors.New("old_string must be a non-empty string (to create a file, use write)")
	case *a.OldString == *a.NewString:
		return tool.Result{}, errors.New("old_string and new_string must differ")
	}
	replaceAll := a.ReplaceAll != nil && *a.ReplaceAll
	tg, err := t.e.resolve(ctx, call, *a.FilePath)
	if err != nil {
		return tool.Result{}, err
	}
	pre, err := t.e.confirmChange(ctx, call, tg)
	if err != nil {
		return tool.Result{}, err
	}
	res, err := t.e.p.Edit(ctx, tg, fs.Edit{Old: *a.OldString, New: *a.NewString, ReplaceAll: replaceAll}, pre)
	if err != nil {
		return tool.Result{}, explainNoMatch(err, *a.OldString)
	}
	t.e.observe(call, tg, res.Version)
	m := meta{Operation: "edit", Replacements: res.Replacements}
	m.Diffs, m.Unified = fileDiffs(*a.FilePath, res.Before, res.After)
	text := fmt.Sprintf("The file %s has been updated successfully.", tg.Path)
	if replaceAll {
		text = fmt.Sprintf("The file %s has been updated. All %d occurrences were successfully replaced.", tg.Path, res.Replacements)
	}
	return tool.Result{Content: tool.TextResult(text).Content, Meta: encodeMeta(m)}, nil
}

// numbered matches a line copied from read's output with its number.
var numbered = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^ *\d+\t`) })

// explainNoMatch adds advice to a no-match error: the usual causes are a
// line-number prefix copied from read's output and whitespace that differs.
func explainNoMatch(err error, old string) error {
	var fe *fs.Error
	if !errors.As(err, &fe) || fe.Code != fs.CodeEditNotFound {
		return err
	}
	hint := "The match is exact, including whitespace and indentation; read the file again and copy the text as it is."
	if numbered().MatchString(old) {
		hint = "old_string seems to include line-number prefixes from read's output (the number and the tab before each line); copy only the text after the tab."
	}
	return &fs.Error{Code: fe.Code, Op: fe.Op, Path: fe.Path, Err: fe, Message: fe.Message + ". " + hint}
}

// Precheck implements [tool.Prechecker]: an edit of a file that does not
// exist, or that the read-before-write policy refuses, is refused before
// anyone is asked to approve it.
func (t *editTool) Precheck(ctx context.Context, call tool.Call) error {
	a, ok := decodeEdit(call.Args)
	if !ok {
		return nil
	}
	return t.e.precheckChange(ctx, call, *a.FilePath, true)
}

// PresentCall implements [tool.CallPresenter]: the requested replacement.
func (t *editTool) PresentCall(args json.RawMessage) *tool.View {
	a, ok := decodeEdit(args)
	if !ok {
		return nil
	}
	d := tool.FileDiff{Path: *a.FilePath, NewText: *a.NewString}
	if *a.OldString != "" {
		d.OldText = a.OldString
	}
	return &tool.View{
		Title:     "Edit " + *a.FilePath,
		Kind:      tool.KindEdit,
		Diffs:     []tool.FileDiff{d},
		Locations: []tool.Location{{Path: *a.FilePath}},
	}
}

// PresentResult implements [tool.ResultPresenter]: the applied hunks, with
// context. Without usable hunks it returns nil (the generic card).
func (t *editTool) PresentResult(args json.RawMessage, res tool.Result) *tool.View {
	if res.IsError {
		return nil
	}
	a, ok := decodeEdit(args)
	if !ok {
		return nil
	}
	diffs := diffsFromMeta(res.Meta)
	if diffs == nil {
		return nil
	}
	return &tool.View{Title: "Edit " + *a.FilePath, Kind: tool.KindEdit, Diffs: diffs}
}

func decodeEdit(args json.RawMessage) (editArgs, bool) {
	var a editArgs
	if json.Unmarshal(args, &a) != nil || a.FilePath == nil || a.OldString == nil || a.NewString == nil ||
		strings.TrimSpace(*a.FilePath) == "" {
		return a, false
	}
	return a, true
}

var (
	_ tool.Tool            = (*editTool)(nil)
	_ tool.CallPresenter   = (*editTool)(nil)
	_ tool.ResultPresenter = (*editTool)(nil)
)
