package term

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dshq/dsh/tool"
	"github.com/dshq/dsh/tools/task"
)

// A read card counts the file's lines, not the read tool's path header
// and footer around them.
func TestReadCardCountsFileLines(t *testing.T) {
	plain := NewStyles(true)
	var b strings.Builder
	b.WriteString("<path>/w/main.go</path>\n<type>file</type>\n<content>\n")
	for i := 1; i <= 12; i++ {
		b.WriteString(strings.Repeat(" ", 5) + string(rune('0'+i%10)) + "\tline\n")
	}
	b.WriteString("\n(End of file - total 12 lines)\n</content>")
	c := &Card{Name: "read", Kind: tool.KindRead, End: 10, State: CardDone, Text: b.String(),
		Call: &tool.View{Title: "Read main.go", Kind: tool.KindRead}}
	if got := joinRows(RenderCard(c, 80, 0, "", plain)); got != "● Read main.go · 0.0s\n  ⎿ 12 lines" {
		t.Fatalf("read card: %q", got)
	}
	c.Text = "<path>/w/one</path>\n<type>file</type>\n<content>\n     1\tonly\n\n(End of file - total 1 lines)\n</content>"
	if got := joinRows(RenderCard(c, 80, 0, "", plain)); !strings.HasSuffix(got, "⎿ 1 line") {
		t.Fatalf("one-line read card: %q", got)
	}
}

// The task tool's card is titled by its description, not by its raw
// arguments (which hold the whole prompt).
func TestTaskCardTitle(t *testing.T) {
	plain := NewStyles(true)
	tl := task.Tool("task", "spawn", nil, nil, nil)
	p, ok := tl.(tool.CallPresenter)
	if !ok {
		t.Fatal("the task tool has no call presenter")
	}
	args := json.RawMessage(`{"description":"Find the flaky test","prompt":"Look through the test suite and find which one is flaky.","subagent_type":"scout"}`)
	c := &Card{Name: "task", Args: string(args), State: CardRunning, Call: p.PresentCall(args)}
	got := joinRows(RenderCard(c, 80, 0, "⠋", plain))
	if !strings.HasPrefix(got, "⠋ Task Find the flaky test (scout) · running") || strings.Contains(got, "prompt=") {
		t.Fatalf("task card: %q", got)
	}
}
