package term

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/dshq/dsh/bash/local"
	fslocal "github.com/dshq/dsh/fs/local"
	"github.com/dshq/dsh/fs/policy"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/tool"
	"github.com/dshq/dsh/tools/bashtool"
	"github.com/dshq/dsh/tools/fstool"
)

var plain = NewStyles(true)

// realTools returns dsh's bash and fs tools (for their presenters).
func realTools(t *testing.T) ToolLookup {
	t.Helper()
	exec, err := local.New(local.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = exec.Close() })
	fsp, err := fslocal.New(fslocal.Options{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry()
	for _, tl := range append(bashtool.Tools(exec, bashtool.Options{}), fstool.Tools(fsp, policy.New(), fstool.Options{})...) {
		if _, err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	return reg.Get
}

func joinRows(rows []string) string { return strings.Join(rows, "\n") }

func TestCardRunningAndWaiting(t *testing.T) {
	c := &Card{Name: "bash", Args: `{"command":"sleep 30","description":"Wait"}`, Start: 1000, State: CardRunning,
		Call: &tool.View{Title: "sleep 30", Kind: tool.KindExecute, Command: "sleep 30", Text: "Wait"}}
	got := joinRows(RenderCard(c, 80, 4500, "⠋", plain))
	if want := "⠋ Bash sleep 30 · Wait · running 3.5s"; got != want {
		t.Fatalf("running card:\n%s\nwant:\n%s", got, want)
	}
	c.State = CardWaiting
	if got := joinRows(RenderCard(c, 80, 4500, "⠋", plain)); got != "? Bash sleep 30 · Wait · awaiting approval" {
		t.Fatalf("waiting card: %q", got)
	}
}

func TestCardCommandOutputTail(t *testing.T) {
	var out []string
	for i := 1; i <= 12; i++ {
		out = append(out, "line "+string(rune('a'-1+i)))
	}
	code := 2
	c := &Card{Name: "bash", Start: 0, End: 1200, State: CardFailed,
		Call:   &tool.View{Kind: tool.KindExecute, Command: "make test"},
		Result: &tool.View{Kind: tool.KindExecute, Command: "make test", Output: strings.Join(out, "\n") + "\n", ExitCode: &code}}
	got := joinRows(RenderCard(c, 60, 0, "", plain))
	want := `● Bash make test · failed · 1.2s
  ⎿ … +4 lines (ctrl-o to expand)
    line e
    line f
    line g
    line h
    line i
    line j
    line k
    line l
    exit code 2`
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestCardUnifiedDiffFromMeta(t *testing.T) {
	meta, _ := json.Marshal(map[string]any{"operation": "edit", "unified": "--- a.go\n+++ a.go\n@@ -9,3 +9,3 @@\n ctx\n-old line\n+new line\n ctx2\n"})
	c := &Card{Name: "edit", Args: `{}`, End: 100, State: CardDone, Meta: meta,
		Result: &tool.View{Title: "Edit a.go", Kind: tool.KindEdit}}
	got := joinRows(RenderCard(c, 60, 0, "", plain))
	want := `● Edit a.go · 0.1s
  ⎿  9   ctx
    10 - old line
    10 + new line
    11   ctx2`
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestCardViewDiffsAndTruncation(t *testing.T) {
	old := "a\nb\nc"
	c := &Card{Name: "edit", End: 50, State: CardDone,
		Result: &tool.View{Title: "Edit some/very/long/path/name/that/goes/on/and/on.go", Diffs: []tool.FileDiff{{Path: "x", OldText: &old, NewText: "a\nB\nc"}}}}
	rows := RenderCard(c, 30, 0, "", plain)
	want := []string{"● Edit some/very/long/… · 0.1s", "  ⎿   a", "    - b", "    + B", "      c"}
	if joinRows(rows) != joinRows(want) {
		t.Fatalf("got:\n%s\nwant:\n%s", joinRows(rows), joinRows(want))
	}
	for _, r := range rows {
		if w := len([]rune(r)); w > 30 {
			t.Errorf("row wider than 30: %q", r)
		}
	}
}

func TestCardErrorAndFallbacks(t *testing.T) {
	c := &Card{Name: "grep", Args: `{"pattern":"foo","path":"src"}`, End: 10, State: CardFailed, IsError: true,
		Text: "Error: no such directory: src\nmore\nlines\nhere\nand\nmore\nstill"}
	got := joinRows(RenderCard(c, 80, 0, "", plain))
	want := `● Grep path=src pattern=foo · failed · 0.0s
  ⎿ Error: no such directory: src
    more
    lines
    here
    and
    more
    … +1 line (ctrl-o to expand)`
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	r := &Card{Name: "read", Kind: tool.KindRead, End: 10, State: CardDone, Text: "1\n2\n3\n",
		Call: &tool.View{Title: "Read main.go", Kind: tool.KindRead}}
	if got := joinRows(RenderCard(r, 80, 0, "", plain)); got != "● Read main.go · 0.0s\n  ⎿ 3 lines" {
		t.Fatalf("read card: %q", got)
	}
	n := &Card{Name: "write", End: 10, State: CardFailed, IsError: true, Note: "denied by you", Text: "Error: not now"}
	if got := joinRows(RenderCard(n, 80, 0, "", plain)); got != "● Write  · failed · 0.0s\n  ⎿ denied by you\n    Error: not now" {
		t.Fatalf("denied card: %q", got)
	}
}

func TestCardRealPresenters(t *testing.T) {
	tools := realTools(t)
	bashT, _ := tools("bash")
	args := json.RawMessage(`{"command":"ls -la","description":"List files"}`)
	cv := bashT.(tool.CallPresenter).PresentCall(args)
	code := 0
	meta, _ := json.Marshal(map[string]any{"exitCode": code})
	rv := bashT.(tool.ResultPresenter).PresentResult(args, tool.Result{Content: []llm.Block{llm.Text("total 0\n")}, Meta: meta})
	c := &Card{Name: "bash", State: CardDone, End: 20, Call: cv, Result: rv}
	if got := joinRows(RenderCard(c, 80, 0, "", plain)); got != "● Bash ls -la · List files · 0.0s\n  ⎿ total 0" {
		t.Fatalf("bash card: %q", got)
	}
	writeT, _ := tools("write")
	wargs := json.RawMessage(`{"file_path":"note.txt","content":"hello\nworld\n"}`)
	wv := writeT.(tool.ResultPresenter).PresentResult(wargs, tool.Result{Content: []llm.Block{llm.Text("ok")}})
	w := &Card{Name: "write", State: CardDone, End: 20, Result: wv, Call: writeT.(tool.CallPresenter).PresentCall(wargs)}
	if got := joinRows(RenderCard(w, 80, 0, "", plain)); got != "● Write note.txt · 0.0s\n  ⎿ 1 + hello\n    2 + world" {
		t.Fatalf("write card: %q", got)
	}
}

func TestColouredDiff(t *testing.T) {
	st := NewStyles(false)
	rows := renderDiff([]diffLine{{Kind: '+', Text: "x"}, {Kind: '-', Text: "y"}}, 10, st)
	if !strings.Contains(rows[0], "\x1b[") || stripANSI(rows[0]) != "+ x" || stripANSI(rows[1]) != "- y" {
		t.Fatalf("coloured rows: %q", rows)
	}
	if rows[0] == rows[1] {
		t.Fatal("+ and - styled alike")
	}
}

func TestLineDiff(t *testing.T) {
	got := lineDiff([]string{"a", "b", "c", "d"}, []string{"a", "x", "c", "d", "e"})
	var sb strings.Builder
	for _, l := range got {
		sb.WriteString(string(l.Kind) + l.Text + " ")
	}
	if s := sb.String(); s != " a -b +x  c  d +e " {
		t.Fatalf("diff: %q", s)
	}
}

func TestFmt(t *testing.T) {
	for ms, want := range map[int64]string{0: "0.0s", 420: "0.4s", 12_300: "12s", 185_000: "3m05s"} {
		if got := fmtDur(ms); got != want {
			t.Errorf("fmtDur(%d) = %q, want %q", ms, got, want)
		}
	}
	for n, want := range map[int]string{950: "950", 1234: "1.2k", 56_789: "56k", 1_300_000: "1.3M"} {
		if got := fmtTokens(n); got != want {
			t.Errorf("fmtTokens(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestCardTimeCountsFromRunNotApproval(t *testing.T) {
	c := &Card{Name: "bash", Start: 1000, Asked: 1100, State: CardWaiting,
		Call: &tool.View{Kind: tool.KindExecute, Command: "make"}}
	if got := joinRows(RenderCard(c, 80, 9100, "⠋", plain)); got != "? Bash make · awaiting approval 8.0s" {
		t.Fatalf("waiting card: %q", got)
	}
	// Approved at 12.1s: the run's time starts there; the wait is named apart.
	c.State, c.Ran = CardRunning, 12100
	if got := joinRows(RenderCard(c, 80, 14100, "⠋", plain)); got != "⠋ Bash make · running 2.0s · waited 11s for approval" {
		t.Fatalf("running card: %q", got)
	}
	c.State, c.End = CardDone, 20500
	c.Result = &tool.View{Kind: tool.KindExecute, Command: "make", Output: "ok\n"}
	if got := RenderCard(c, 80, 0, "", plain)[0]; got != "● Bash make · 8.4s · waited 11s for approval" {
		t.Fatalf("finished card: %q", got)
	}
	// A call nobody was asked about counts from its call.
	d := &Card{Name: "bash", Start: 1000, End: 3000, State: CardDone, Result: &tool.View{Command: "ls", Output: "a\n"}}
	if got := RenderCard(d, 80, 0, "", plain)[0]; got != "● Bash ls · 2.0s" {
		t.Fatalf("unasked card: %q", got)
	}
}

func TestCardLiveOutputTail(t *testing.T) {
	c := &Card{Name: "bash", Start: 0, State: CardRunning, Call: &tool.View{Kind: tool.KindExecute, Command: "build"}, Tail: &OutputTail{}}
	for i := 1; i <= 300; i++ {
		c.Tail.Write([]byte(fmt.Sprintf("step %d\n", i)))
	}
	c.Tail.Write([]byte("progress 10%\rprogress 90%")) // a progress bar redraws its line
	c.Tail.Write([]byte("\x1b]52;c;aGk=\x07 evil\n"))  // control sequences are shown, never sent
	got := joinRows(RenderCard(c, 60, 1000, "⠋", plain))
	want := `⠋ Bash build · running 1.0s
  ⎿ … +296 lines
    step 297
    step 298
    step 299
    step 300
    progress 90%^[]52;c;aGk=^G evil`
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	c.Expanded = true
	rows := RenderCard(c, 60, 1000, "⠋", plain)
	// Expanded: every kept line (the last tailKeep), and how many were dropped.
	if len(rows) != 1+1+tailKeep || !strings.Contains(rows[1], fmt.Sprintf("… +%d lines", 301-tailKeep)) || !strings.HasSuffix(rows[len(rows)-1], "evil") {
		t.Fatalf("expanded running card has %d rows:\n%s", len(rows), joinRows(rows[:4]))
	}
	long := strings.Repeat("x", 5000)
	var tl OutputTail
	tl.Write([]byte(long + "\n"))
	if ls, _ := tl.Lines(0); len(ls) != 1 || len(ls[0]) != tailLineMax {
		t.Fatalf("a long line is kept whole: %d bytes", len(ls[0]))
	}
}

func TestCardExpandShowsEverything(t *testing.T) {
	var out []string
	for i := 1; i <= 40; i++ {
		out = append(out, fmt.Sprintf("line %d %s", i, strings.Repeat("w ", 40)))
	}
	c := &Card{Name: "bash", Start: 0, End: 1000, State: CardDone,
		Result: &tool.View{Kind: tool.KindExecute, Command: "gen", Output: strings.Join(out, "\n")}}
	collapsed := joinRows(RenderCard(c, 60, 0, "", plain))
	if !strings.Contains(collapsed, "… +32 lines (ctrl-o to expand)") || strings.Contains(collapsed, "line 1 ") {
		t.Fatalf("collapsed:\n%s", collapsed)
	}
	c.Expanded = true
	rows := RenderCard(c, 60, 0, "", plain)
	full := joinRows(rows)
	if strings.Contains(full, "ctrl-o") || !strings.Contains(full, "line 1 w") || !strings.Contains(full, "line 40 w") {
		t.Fatalf("expanded:\n%s", full)
	}
	for _, r := range rows {
		if w := ansi.StringWidth(r); w > 60 {
			t.Fatalf("row wider than the terminal (%d): %q", w, r)
		}
	}
	if strings.Contains(full, "…") {
		t.Fatalf("an expanded card cuts nothing:\n%s", full)
	}
}

func TestCardDeniedByTheUser(t *testing.T) {
	c := &Card{Name: "write", Start: 0, End: 10, State: CardFailed, IsError: true, Note: "denied by you", Denied: true, Reason: "not now",
		Text: "The user denied this tool call: not now", Call: &tool.View{Title: "Write a.txt"}}
	if got := joinRows(RenderCard(c, 80, 0, "", plain)); got != "● Write a.txt · Denied\n  ⎿ denied by you\n    reason: not now" {
		t.Fatalf("denied card: %q", got)
	}
}
