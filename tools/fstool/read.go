package fstool

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/dshq/dsh/fs"
	"github.com/dshq/dsh/tool"
)

//go:embed read.md
var readDescription string

type readTool struct {
	e    *env
	info tool.Info
}

func newRead(e *env) *readTool {
	schema := fmt.Sprintf(`{"type":"object","properties":{`+
		`"file_path":{"type":"string","description":"Path of the file to read: absolute, or relative to the working directory."},`+
		`"offset":{"type":"integer","minimum":1,"description":"Line number to start reading from (1-based). Default 1."},`+
		`"limit":{"type":"integer","minimum":1,"maximum":%d,"description":"Maximum number of lines to read. Default and maximum %d."}`+
		`},"required":["file_path"]}`, e.o.MaxLines, e.o.MaxLines)
	return &readTool{e: e, info: tool.Info{
		Name:        "read",
		Description: e.describe(readDescription),
		Parameters:  json.RawMessage(schema),
		Kind:        tool.KindRead,
		ReadOnly:    true,
		Concurrent:  true,
	}}
}

func (t *readTool) Info() tool.Info { return t.info }

type readArgs struct {
	FilePath *string  `json:"file_path"`
	Offset   *float64 `json:"offset"`
	Limit    *float64 `json:"limit"`
}

func (t *readTool) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	a, err := tool.DecodeArgs[readArgs](call)
	if err != nil {
		return tool.Result{}, err
	}
	o := t.e.o
	if a.FilePath == nil {
		return tool.Result{}, missing(t.info.Name, "file_path")
	}
	if strings.TrimSpace(*a.FilePath) == "" {
		return tool.Result{}, errors.New("file_path must be a non-empty string")
	}
	offset, limit := 1, o.MaxLines
	if a.Offset != nil {
		if !positiveInt(*a.Offset) {
			return tool.Result{}, errors.New("offset must be a positive integer")
		}
		offset = int(*a.Offset)
	}
	if a.Limit != nil {
		if !positiveInt(*a.Limit) {
			return tool.Result{}, errors.New("limit must be a positive integer")
		}
		if *a.Limit > float64(o.MaxLines) {
			return tool.Result{}, fmt.Errorf("limit must be less than or equal to %d", o.MaxLines)
		}
		limit = int(*a.Limit)
	}
	tg, err := t.e.resolve(ctx, call, *a.FilePath)
	if err != nil {
		return tool.Result{}, err
	}
	w, err := t.e.p.ReadLines(ctx, tg, fs.ReadRequest{
		Offset: offset, Limit: limit,
		MaxLineLength: o.MaxLineLength, MaxBytes: o.MaxBytes, CountLimit: o.CountLimit,
	})
	if err != nil {
		return tool.Result{}, err
	}
	if t.e.o.Confirm != nil {
		// The window is discarded unless the file read is the one allowed.
		if err := t.e.o.Confirm(ctx, call, tg.Key, w.ID); err != nil {
			return tool.Result{}, err
		}
	}
	if len(w.Lines) == 0 && offset > w.TotalLines && !(w.TotalLines == 0 && offset == 1) {
		return tool.Result{}, fs.Errorf(fs.CodeNotFound, "read", tg.Path,
			"offset %d is out of range for %q (%d lines)", offset, tg.Path, w.TotalLines)
	}
	t.e.observe(call, tg, w.Version)
	return tool.TextResult(envelope(tg.Path, t.format(offset, w))), nil
}

// ParseFooter reads back what format's footer says of a window: the
// file's line count when the tool knew it (0 when not) and whether the file
// goes on past the lines shown. The footer is text for the model; the
// consumers that present a read to people or to other tools' formats (the
// terminal's @ mention, Claude Code's file window for hooks) read it with
// this, so the format and its parser change together.
func ParseFooter(text string) (total int, more bool) {
	for rest := text; ; {
		i := strings.LastIndex(rest, "\n(")
		if i < 0 {
			return 0, false
		}
		line, _, _ := strings.Cut(rest[i+1:], "\n")
		rest = rest[:i]
		var from, to int
		switch {
		case strings.HasPrefix(line, "(End of file - total "):
			_, _ = fmt.Sscanf(line, "(End of file - total %d lines)", &total)
			return total, false
		case strings.HasPrefix(line, "(Output capped at "):
			return 0, true
		case strings.HasPrefix(line, "(Showing lines "):
			if _, err := fmt.Sscanf(line, "(Showing lines %d-%d of %d.", &from, &to, &total); err != nil {
				total = 0 // "; the file is 2.0 MiB and continues"
			}
			return total, true
		}
	}
}

// format renders the window cat -n style, then the footer that tells the
// model where it is and how to go on.
func (t *readTool) format(offset int, w fs.Window) string {
	var b strings.Builder
	size := 200
	for _, l := range w.Lines {
		size += len(l.Text) + 8
	}
	b.Grow(size)
	var num []byte
	for _, l := range w.Lines {
		num = strconv.AppendInt(num[:0], int64(l.Number), 10)
		for range 6 - len(num) { // "%6d"
			b.WriteByte(' ')
		}
		b.Write(num)
		b.WriteByte('\t')
		b.WriteString(l.Text)
		if l.Truncated {
			fmt.Fprintf(&b, "... (line truncated to %d chars)", t.e.o.MaxLineLength)
		}
		b.WriteByte('\n')
	}
	if len(w.Lines) > 0 {
		b.WriteByte('\n')
	}
	end := offset - 1
	if n := len(w.Lines); n > 0 {
		end = w.Lines[n-1].Number
	}
	switch {
	case w.Capped:
		fmt.Fprintf(&b, "(Output capped at %d KiB. Showing lines %d-%d. Use offset=%d to continue.)",
			t.e.o.MaxBytes>>10, offset, end, end+1)
	case w.More && w.Complete:
		fmt.Fprintf(&b, "(Showing lines %d-%d of %d. Use offset=%d to continue.)", offset, end, w.TotalLines, end+1)
	case w.More:
		fmt.Fprintf(&b, "(Showing lines %d-%d; the file is %s and continues. Use offset=%d to continue.)",
			offset, end, sizeString(w.Size), end+1)
	default:
		fmt.Fprintf(&b, "(End of file - total %d lines)", w.TotalLines)
	}
	if w.InvalidUTF8 {
		b.WriteString("\n(Some bytes are not valid UTF-8 and are shown as \uFFFD. The edit tool cannot change this file; use bash if you must.)")
	}
	return b.String()
}

// PresentCall implements [tool.CallPresenter]: "Read path (from - to)".
func (t *readTool) PresentCall(args json.RawMessage) *tool.View {
	var a readArgs
	if json.Unmarshal(args, &a) != nil || a.FilePath == nil || strings.TrimSpace(*a.FilePath) == "" {
		return nil
	}
	path := *a.FilePath
	start := 1
	if a.Offset != nil && positiveInt(*a.Offset) {
		start = int(*a.Offset)
	}
	title := "Read " + path
	switch {
	case a.Limit != nil && positiveInt(*a.Limit):
		title += fmt.Sprintf(" (%d - %d)", start, start+int(*a.Limit)-1)
	case a.Offset != nil && positiveInt(*a.Offset):
		title += fmt.Sprintf(" (from line %d)", start)
	}
	return &tool.View{Title: title, Kind: tool.KindRead, Locations: []tool.Location{{Path: path, Line: start}}}
}

// sizeString formats a byte count for the model ("1.5 GiB").
func sizeString(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

var (
	_ tool.Tool          = (*readTool)(nil)
	_ tool.CallPresenter = (*readTool)(nil)
)
