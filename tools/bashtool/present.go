package bashtool

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/tool"
)

// presentArgs reads arguments softly for presentation: presenters run on
// live calls and on replays of arbitrary logs, so they never fail, they just
// decline (nil) what they cannot read.
func presentArgs(args json.RawMessage) (bashArgs, bool) {
	var a bashArgs
	if json.Unmarshal(args, &a) != nil || strings.TrimSpace(a.Command) == "" || strings.TrimSpace(a.Description) == "" {
		return bashArgs{}, false
	}
	return a, true
}

// PresentCall renders a foreground command as a terminal card (command,
// cwd as the model gave it, description) and a background start as a
// generic execute card.
func (t *bashTool) PresentCall(args json.RawMessage) *tool.View {
	a, ok := presentArgs(args)
	if !ok {
		return nil
	}
	if a.RunInBackground {
		return &tool.View{Title: a.Command, Kind: tool.KindExecute, Text: a.Description}
	}
	v := &tool.View{Title: a.Command, Kind: tool.KindExecute, Command: a.Command, Text: a.Description}
	if a.Workdir != nil {
		v.Cwd = *a.Workdir
	}
	return v
}

// PresentResult renders a foreground result as terminal output with its exit
// code, and a background acknowledgement or an error as a console block.
// The exit status comes from the result's meta; results recorded without
// meta fall back to the markers at the end of the text.
func (t *bashTool) PresentResult(args json.RawMessage, res tool.Result) *tool.View {
	a, ok := presentArgs(args)
	if !ok || len(res.Content) != 1 || res.Content[0].Type != llm.BlockText {
		return nil
	}
	text := res.Content[0].Text
	if a.RunInBackground || res.IsError {
		return &tool.View{Kind: tool.KindExecute, Text: "```console\n" + strings.TrimRight(text, "\n") + "\n```"}
	}
	v := &tool.View{Kind: tool.KindExecute, Command: a.Command, Output: text}
	if a.Workdir != nil {
		v.Cwd = *a.Workdir
	}
	code, signal := exitOf(res.Meta, text)
	if signal != "" {
		v.Text = "killed by signal: " + signal
	} else {
		v.ExitCode = &code
	}
	// The card states the outcome itself: the marker the model reads at
	// the end of the text would show it twice (a marker the command printed
	// that does not match the outcome stays: it is output).
	marker, want := exitMarker(), strconv.Itoa(code)
	if signal != "" {
		marker, want = signalMarker(), signal
	}
	if m := marker.FindStringSubmatchIndex(text); m != nil && text[m[2]:m[3]] == want && (signal != "" || code != 0) {
		v.Output = text[:m[0]] + "\n"
	}
	return v
}

var (
	signalMarker = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\n\[killed by signal: (\w+)\]$`) })
	exitMarker   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\n\[exit code: (\d+)\]$`) })
)

// exitOf returns the exit code, or the signal, of a rendered result.
func exitOf(meta json.RawMessage, text string) (code int, signal string) {
	var m runMeta
	if len(meta) > 0 && json.Unmarshal(meta, &m) == nil && (m.ExitCode != nil || m.Signal != "") {
		if m.Signal != "" {
			return 0, m.Signal
		}
		return *m.ExitCode, ""
	}
	// Only a marker on its own final line counts, so output that merely
	// ends in marker-like text is not read as a failure.
	if s := signalMarker().FindStringSubmatch(text); s != nil {
		return 0, s[1]
	}
	if s := exitMarker().FindStringSubmatch(text); s != nil {
		if n, err := strconv.Atoi(s[1]); err == nil {
			return n, ""
		}
	}
	return 0, ""
}

var (
	_ tool.CallPresenter   = (*bashTool)(nil)
	_ tool.ResultPresenter = (*bashTool)(nil)
	_ tool.CallPresenter   = (*outputTool)(nil)
	_ tool.CallPresenter   = (*killTool)(nil)
)
