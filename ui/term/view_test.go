package term

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// viewTitle matches the transcript view's title: the rows shown and how
// many rows the view holds.
var viewTitle = regexp.MustCompile(`✻ Transcript  rows \d+–\d+ of (\d+)`)

// heldRows is the number of rows the newest frame's title says the view
// holds.
func (h *harness) heldRows() int {
	h.t.Helper()
	m := viewTitle.FindAllStringSubmatch(h.screen(), -1)
	if len(m) == 0 {
		h.t.Fatal("no transcript view title in the output")
	}
	n, _ := strconv.Atoi(m[len(m)-1][1])
	return n
}

// demoTurns runs n demo turns whose prompts are turn-1 … turn-n.
func (h *harness) demoTurns(n int) {
	h.t.Helper()
	for i := 1; i <= n; i++ {
		h.send(fmt.Sprintf("turn-%d\r", i))
		h.wait(fmt.Sprintf("› turn-%d", i), "That was the whole loop", "steps · in ") // the turn's footer: it ended
	}
}

// The transcript view holds a few pages of a long session, never all of
// it: opened, it holds the end; scrolled or searched past what it holds, it
// replays the next stretch from the store (the session released those
// payloads from memory) and drops the farthest page, so the rows it holds
// stay fewer than the whole transcript's however far it is scrolled.
func TestTranscriptViewPages(t *testing.T) {
	const turns = 8
	// The whole transcript, as one page (the default page is far longer
	// than these turns).
	h := startUI(t, nil)
	h.demoTurns(turns)
	h.send("\x0f")
	h.wait("✻ Transcript", "› turn-8")
	all := h.heldRows()
	h.send("q")
	h.exit()

	pageEvents, pages := viewPageEvents, viewPages
	viewPageEvents, viewPages = 20, 2 // about a turn a page
	t.Cleanup(func() { viewPageEvents, viewPages = pageEvents, pages })
	h = startUI(t, nil)
	h.demoTurns(turns)
	h.send("\x0f")
	h.wait("✻ Transcript", "That was the whole loop")
	if n := h.heldRows(); n >= all/2 {
		t.Fatalf("the view opened holding %d rows of the %d of the whole transcript; want its last pages only", n, all)
	}
	// To the log's start: its first page is replayed.
	h.send("g")
	h.wait("rows 1–", "› turn-1")
	if n := h.heldRows(); n >= all/2 {
		t.Fatalf("at the top the view holds %d rows of %d", n, all)
	}
	// Page by page to the end again: each page is replayed as it is
	// reached, and the farthest is dropped.
	most := 0
	for i := 0; ; i++ {
		if i == 60 {
			t.Fatal("paging down never reached turn-8")
		}
		h.send(" ")
		h.wait("✻ Transcript")
		most = max(most, h.heldRows())
		if h.lastFrameHas("› turn-8") {
			break
		}
	}
	if most >= all {
		t.Fatalf("paging through, the view held up to %d rows; the whole transcript is %d", most, all)
	}
	// A search wraps around past the pages held: turn-1 is found from the
	// end of the log.
	h.send("/")
	h.send("turn-1\r")
	h.wait(`for "turn-1" in this part of the session`)
	if !h.lastFrameHas("turn-1") {
		t.Fatalf("the match is not on screen:\n%s", h.lastFrame())
	}
	h.send("G")
	h.wait("That was the whole loop")
	h.send("q")
	h.exit()
}

// lastFrame is the newest frame of the transcript view.
func (h *harness) lastFrame() string {
	s := h.screen()
	i := viewTitle.FindAllStringIndex(s, -1)
	if len(i) == 0 {
		return ""
	}
	return s[i[len(i)-1][0]:]
}

func (h *harness) lastFrameHas(sub string) bool {
	return strings.Contains(h.lastFrame(), sub)
}

// A resumed session shows its last turns and counts the earlier ones in
// its totals: the log is streamed from the store, and what is not shown
// is read only for its usage.
func TestResumeShowsLastTurns(t *testing.T) {
	h := startUI(t, nil)
	h.demoTurns(replayTurns + 1)
	h.send("/usage\r")
	h.wait("this session: 11 turns")
	usage := usageLine(h.screen())
	h.send("/clear\r")
	h.wait("── new session")
	h.send("/resume\r")
	h.wait("Resume a session", "❯ turn-1")
	h.send("\r")
	h.wait("… 1 earlier turn not shown", "› turn-2", "› turn-11", "That was the whole loop")
	if strings.Contains(h.screen()[strings.LastIndex(h.screen(), "earlier turn not shown"):], "› turn-1\n") {
		t.Fatal("the hidden turn was shown")
	}
	h.send("/usage\r")
	h.wait("this session: 11 turns")
	if got := usageLine(h.screen()); got != usage {
		t.Fatalf("after the resume /usage says %q; before it said %q", got, usage)
	}
	h.exit()
}

// usageLine is the last /usage line of the output.
func usageLine(s string) string {
	i := strings.LastIndex(s, "this session: ")
	if i < 0 {
		return ""
	}
	line, _, _ := strings.Cut(s[i:], "\n")
	return strings.TrimSpace(line)
}
