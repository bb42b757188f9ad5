package term

import (
	"context"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// A resize that lands while a frame renders (the terminal already reflowed,
// the frame still laid out for the old width) gets a frame laid out for the
// new width: one for the old width would climb too few of the reflowed
// lines and leave the region's top behind, as TestResizeIsCleanInTmux saw
// on a loaded CI machine.
func TestFrameFollowsAResizeDuringItsRender(t *testing.T) {
	h := startUI(t, nil)
	cols, calls := 160, 0
	width := func() int {
		calls++
		w := cols
		if calls == 1 {
			cols = 60 // the window narrows while the first layout runs
		}
		return w
	}
	var out strings.Builder
	u := &ui{o: Options{Width: width, Height: func() int { return 40 }, Env: func(string) string { return "" }},
		app: h.app, out: &out, st: NewStyles(true), md: newMarkdown(true, func(string) string { return "" }),
		q: newQueue(), done: make(chan struct{}), ctx: context.Background()}
	u.ed = NewEditor(nil)
	u.tr = u.newTranscript()
	u.ed.SetText(strings.Repeat("word ", 30)) // 150 columns: one row at 160, three at 60
	u.draw()
	rows := strings.Split(ansi.Strip(out.String()), "\n")
	var joined strings.Builder // the input's rows rejoined, the editor wraps inside words
	for _, r := range rows {
		r = strings.Trim(r, "\r")
		if w := ansi.StringWidth(r); w > 60 {
			t.Fatalf("a row of the frame is %d columns wide on a 60-column terminal: %q\nframe:\n%s", w, r, strings.Join(rows, "\n"))
		}
		if strings.HasPrefix(r, "› ") || strings.HasPrefix(r, "  ") {
			joined.WriteString(strings.ReplaceAll(r[strings.Index(r, " ")+1:], " ", ""))
		}
	}
	if typed := strings.Count(joined.String(), "word"); typed != 30 {
		t.Fatalf("the frame shows %d of the 30 typed words:\n%s", typed, strings.Join(rows, "\n"))
	}
	// The region is recorded at the width it was drawn for: the next
	// frame climbs exactly its rows.
	if got := u.scr.lines(60); got != u.scr.rows {
		t.Fatalf("the region drawn for 60 columns spans %d lines at 60, want its %d rows", got, u.scr.rows)
	}
}
