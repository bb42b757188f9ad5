package term

import (
	"strings"
	"testing"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
)

func TestBlockSplitter(t *testing.T) {
	cases := []struct {
		text string
		want string // the complete blocks
	}{
		{"one paragraph\nstill it", ""},
		{"first\n\nsec", "first\n\n"},
		{"first\n\n", ""},
		{"first\n\n  indented continuation", ""},
		{"- item\n\n  more of the item\n\nNext", "- item\n\n  more of the item\n\n"},
		{"intro\n```go\nx\n\ny\n", "intro\n"},
		{"```go\nx\n\nnot a block\n```\nafter", "```go\nx\n\nnot a block\n```\n"},
		{"~~~~\n```\n~~~~\n", "~~~~\n```\n~~~~\n"},
		{"- a\n  ```\n  x\n  ```\n- b", ""},
		{"# Head\n\npara one\n\npara two\n\n| a |", "# Head\n\npara one\n\npara two\n\n"},
	}
	for _, c := range cases {
		var b blockSplitter
		if got := c.text[:b.scan(c.text)]; got != c.want {
			t.Errorf("%q: complete %q, want %q", c.text, got, c.want)
		}
		// Fed a byte at a time, the same cut.
		var inc blockSplitter
		cut := 0
		for i := 1; i <= len(c.text); i++ {
			n := inc.scan(c.text[:i])
			if n < cut {
				t.Fatalf("%q: the cut went back from %d to %d", c.text, cut, n)
			}
			cut = n
		}
		if got := c.text[:cut]; got != c.want {
			t.Errorf("%q fed bytewise: complete %q, want %q", c.text, got, c.want)
		}
	}
}

const streamSample = "# Plan\n\nFirst I read **main.go** and `go.mod`.\n\n" +
	"| file | lines |\n|:--|--:|\n| main.go | 12 |\n\n" +
	"```go\nfunc main() {\n\n\tprintln(1)\n}\n```\n" +
	"Then:\n\n1. edit\n2. test\n\n- [x] done\n\nThat is all."

// TestStreamingMarkdownWithoutReflow streams an answer a few bytes at a
// time: complete blocks are committed while it streams, never changed, and
// with the finished message the scrollback holds exactly what rendering
// the whole message at once gives.
func TestStreamingMarkdownWithoutReflow(t *testing.T) {
	whole := newTestTranscript(t, 60)
	whole.Apply(mkEvent(t, session.TypeAssistantMessage, session.AssistantMessage{Content: []llm.Block{llm.Text(streamSample)}}))
	want := whole.Take()

	tr := newTestTranscript(t, 60)
	var committed strings.Builder
	sawLiveBold := false
	for i := 0; i < len(streamSample); i += 3 {
		part := streamSample[i:min(i+3, len(streamSample))]
		tr.Apply(mkEvent(t, session.TypeAssistantChunk, session.AssistantChunk{Chunk: llm.TextChunk(0, part)}))
		committed.WriteString(tr.Take())
		for _, l := range tr.Live(60, 0, "", 30) {
			if strings.Contains(l, "**") {
				t.Fatalf("raw Markdown in the live region: %q", l)
			}
			if strings.Contains(l, "main.go and") {
				sawLiveBold = true
			}
		}
	}
	if !sawLiveBold {
		t.Fatal("the block being written was never shown live")
	}
	before := committed.String()
	if !strings.Contains(before, "Plan") || !strings.Contains(before, "func main") {
		t.Fatalf("complete blocks were not committed while streaming:\n%s", before)
	}
	tr.Apply(mkEvent(t, session.TypeAssistantMessage, session.AssistantMessage{Content: []llm.Block{llm.Text(streamSample)}}))
	committed.WriteString(tr.Take())
	if got := committed.String(); got != want {
		t.Fatalf("streamed:\n%s\nwhole:\n%s", got, want)
	}
	if live := tr.Live(60, 0, "", 30); len(live) != 0 {
		t.Fatalf("live rows after the message: %q", live)
	}
}

// A message that differs from what streamed is shown whole: nothing lost.
func TestStreamingMismatchShowsMessage(t *testing.T) {
	tr := newTestTranscript(t, 60)
	tr.Apply(mkEvent(t, session.TypeAssistantChunk, session.AssistantChunk{Chunk: llm.TextChunk(0, "alpha\n\nbeta")}))
	tr.Apply(mkEvent(t, session.TypeAssistantMessage, session.AssistantMessage{Content: []llm.Block{llm.Text("gamma")}}))
	got := tr.Take()
	if !strings.Contains(got, "alpha") || !strings.Contains(got, "gamma") {
		t.Fatalf("got:\n%s", got)
	}
}
