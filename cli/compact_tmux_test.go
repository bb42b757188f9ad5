package cli

import (
	"strings"
	"testing"
)

// essay is an answer long enough that a few of them are worth summarizing.
var essay = strings.Repeat("The essay goes on about the harness and its parts. ", 40)

// summaryStep answers compaction's summarization request.
var summaryStep = promptStep{key: "Summarize this history", text: "## Goal\n- write essays\n## Next step\n- wait for the user"}

// essays runs the three essay turns.
func essays(tt *tmuxTerm) {
	tt.t.Helper()
	for _, e := range [][2]string{{"essay one", "One: The essay"}, {"essay two", "Two: The essay"}, {"essay three", "Three: The essay"}} {
		tt.prompt(e[0])
		tt.waitFor(e[1])
		tt.idle()
	}
}

// chatMessages is a request's messages as "role: text" lines.
func chatMessages(r chatRequest) string {
	var b strings.Builder
	for _, msg := range r.Messages {
		b.WriteString(msg.Role + ": " + msg.text() + "\n")
	}
	return b.String()
}

// /compact on a short session (three turns, a few thousand tokens, far
// under the quarter of the window compaction keeps verbatim on its own)
// compacts, and the next request carries the summary and the new prompt.
func TestCompactShortSessionInTmux(t *testing.T) {
	m, srv := newPromptModel(t, summaryStep,
		promptStep{key: "essay one", text: "One: " + essay},
		promptStep{key: "essay two", text: "Two: " + essay},
		promptStep{key: "essay three", text: "Three: " + essay},
	)
	s := newTermProject(t, srv, "")
	tt := s.start(t)
	essays(tt)
	tt.prompt("/compact")
	scr := tt.waitFor("✻ Conversation compacted: ~")
	if strings.Contains(scr, "Compaction failed") {
		t.Fatalf("compaction failed:\n%s", scr)
	}
	tt.idle()
	tt.prompt("after the compaction")
	tt.waitFor("Finished: after the compaction")
	got := chatMessages(m.last())
	if !strings.Contains(got, "compacted-summary") || !strings.Contains(got, "## Goal\n- write essays") || strings.Contains(got, "One: The essay") {
		t.Fatalf("the request after /compact:\n%s", got)
	}
	if !strings.HasSuffix(strings.TrimSpace(got), "user: after the compaction") {
		t.Fatalf("the new prompt is not last:\n%s", got)
	}
	tt.exit()
}

// A provider's context-too-long refusal compacts the conversation once and
// asks again: the answer arrives without the user doing anything. Refused
// again after that one compaction, the turn ends with the error and says
// how to recover.
func TestContextTooLongCompactsInTmux(t *testing.T) {
	m, srv := newPromptModel(t, summaryStep,
		promptStep{key: "essay one", text: "One: " + essay},
		promptStep{key: "essay two", text: "Two: " + essay},
		promptStep{key: "essay three", text: "Three: " + essay},
		promptStep{key: "one more question", text: "Answered after compaction", tooLong: true},
		promptStep{key: "hopeless question", text: "never sent", tooLongAlways: true},
	)
	s := newTermProject(t, srv, "")
	tt := s.start(t)
	essays(tt)
	sent := func(prompt string) (asked, summaries int) {
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, r := range m.requests {
			last := r.Messages[len(r.Messages)-1]
			switch {
			case strings.HasPrefix(last.text(), "Summarize this history"):
				summaries++
			case last.Role == "user" && last.text() == prompt:
				asked++
			}
		}
		return
	}
	tt.prompt("one more question")
	scr := tt.waitFor("✻ Conversation compacted: ~", "Answered after compaction")
	if strings.Contains(scr, "✗ Error") {
		t.Fatalf("the refusal reached the user although compaction recovered:\n%s", scr)
	}
	if asked, summaries := sent("one more question"); asked != 2 || summaries != 1 {
		t.Fatalf("the prompt was sent %d times with %d summaries; want 2 and 1", asked, summaries)
	}
	tt.idle()
	_, before := sent("")
	tt.prompt("hopeless question")
	scr = tt.waitFor("request too long for the model's context window", "(CONTEXT_TOO_LONG)", "/compact [focus] summarizes it")
	if asked, summaries := sent("hopeless question"); asked > 2 || summaries-before > 1 {
		t.Fatalf("the refused prompt was sent %d times with %d more summaries; want at most one retry after one compaction:\n%s", asked, summaries-before, scr)
	}
	tt.exit()
}
