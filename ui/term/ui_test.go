package term

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/providers"
	"github.com/dshq/dsh/permission"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/settings"
	"github.com/dshq/dsh/tool"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// harness runs the UI in-process on a pipe, with the demo model.
type harness struct {
	t    *testing.T
	app  *app.App
	in   *io.PipeWriter
	out  *syncBuffer
	done chan error
	home string
	cwd  string
	mark int // output offset searched by wait

	mu  sync.Mutex
	log []session.Event // every appended event
}

func startUI(t *testing.T, setup func(*app.App)) *harness {
	return startUIWith(t, nil, setup)
}

func startUIWith(t *testing.T, opts func(*app.Options), setup func(*app.App)) *harness {
	t.Helper()
	return startUITerm(t, opts, nil, setup)
}

// startUITerm is startUIWith that also adjusts the terminal's own options.
func startUITerm(t *testing.T, opts func(*app.Options), term func(*harness, *Options), setup func(*app.App)) *harness {
	t.Helper()
	home, cwd := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// Without a test's own permission settings everything runs, as the
	// rendering tests expect.
	o := app.Options{
		Config: testConfig(t, permission.Key.Flag("--permission-mode", permission.Settings{DefaultMode: string(permission.ModeBypass)})),
		Site:   core.Site{Home: home, Cwd: cwd, NoSync: true, Getenv: func(string) string { return "" }},
	}
	if opts != nil {
		opts(&o)
	}
	a, err := app.New(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	if setup != nil {
		setup(a)
	}
	pr, pw := io.Pipe()
	h := &harness{t: t, app: a, in: pw, out: &syncBuffer{}, done: make(chan error, 1), home: home, cwd: cwd}
	a.Host.Sessions.Appended.Listen(func(_ context.Context, ap session.Appended) error {
		h.mu.Lock()
		h.log = append(h.log, ap.Event)
		h.mu.Unlock()
		return nil
	})
	to := Options{In: pr, Out: h.out, App: a, Home: home, Cwd: cwd, NoColor: true,
		Width: func() int { return 100 }, Height: func() int { return 40 }, Env: func(string) string { return "" }}
	if term != nil {
		term(h, &to)
	}
	go func() { h.done <- Run(ctx, to) }()
	t.Cleanup(func() { _ = pw.Close() })
	h.wait("›")
	h.mark = 0
	return h
}

func (h *harness) screen() string { return stripANSI(h.out.String()) }

func (h *harness) send(s string) {
	h.t.Helper()
	if _, err := h.in.Write([]byte(s)); err != nil {
		h.t.Fatal(err)
	}
}

// wait polls the output written since the last wait for every substring.
func (h *harness) wait(subs ...string) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := h.screen()
		rest := s[min(h.mark, len(s)):]
		ok := true
		for _, sub := range subs {
			if !strings.Contains(rest, sub) {
				ok = false
				break
			}
		}
		if ok {
			last := 0
			for _, sub := range subs {
				last = max(last, strings.LastIndex(rest, sub)+len(sub))
			}
			h.mark += last
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %q; output since the last match:\n%s", subs, rest)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitAny polls for any of the substrings.
func (h *harness) waitAny(subs ...string) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := h.screen()
		rest := s[min(h.mark, len(s)):]
		for _, sub := range subs {
			if i := strings.Index(rest, sub); i >= 0 {
				h.mark += i + len(sub)
				return
			}
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for any of %q; output since the last match:\n%s", subs, rest)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (h *harness) exit() {
	h.t.Helper()
	h.send("/exit\r")
	select {
	case err := <-h.done:
		if err != nil {
			h.t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		h.t.Fatal("Run did not return after /exit")
	}
}

func TestRunDemoSession(t *testing.T) {
	h := startUI(t, nil)
	h.wait("offline demo model", "DEEPSEEK_API_KEY")
	h.send("hello there\r")
	h.wait("› hello there", "Bash ls -la", "Write dsh-demo-note.txt", "+ Written by dsh's offline demo model.", "That was the whole loop", "✻ ", "cache read")
	if _, err := os.Stat(filepath.Join(h.cwd, "dsh-demo-note.txt")); err != nil {
		t.Fatalf("the demo's write did not happen: %v", err)
	}
	// History is persisted.
	if b, _ := os.ReadFile(filepath.Join(h.home, "history")); !strings.Contains(string(b), `"hello there"`) {
		t.Fatalf("history file: %q", b)
	}
	h.send("/help\r")
	h.wait("Commands", "/resume", "Keys")
	h.send("/model\r")
	h.wait("model:", "demo/offline")
	h.send("/model nope\r")
	h.wait(`unknown model "nope"`)
	h.send("/compact\r")
	h.waitAny("✻ Compaction failed", "✻ Conversation compacted")
	h.send("/permissions\r")
	h.wait("permission mode")
	h.send("/bogus\r")
	h.wait("unknown command /bogus")
	h.send("/resume\r")
	h.wait("no other sessions in this directory")
	h.send("/clear\r")
	h.wait("── new session")
	h.send("/resume\r")
	h.wait("Resume a session", "❯ hello there", "2 turns")
	h.send("\r")
	h.wait("── resumed session", "› hello there", "That was the whole loop")
	h.send("/exi\t\r") // tab completes the command
	select {
	case err := <-h.done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no exit")
	}
	if s := h.screen(); !strings.Contains(s, "Resume it with: dsh --resume") {
		t.Fatalf("no goodbye:\n%s", s[max(0, len(s)-500):])
	}
}

// askFor makes calls of name ask for approval, standing in for the
// permission layer.
func askFor(name string) func(*app.App) {
	return func(a *app.App) {
		a.Host.Tools.PreExecute.Use(func(ctx context.Context, c tool.Call, next func(context.Context, tool.Call) (tool.Decision, error)) (tool.Decision, error) {
			if c.Name == name {
				return tool.Decision{Kind: tool.Ask, Reason: "writes need your approval", Suggestions: []string{"write"}}, nil
			}
			return next(ctx, c)
		})
	}
}

func (h *harness) events(typ string) []session.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []session.Event
	for _, e := range h.log {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func TestRunApprovalDenyWithReasonThenAllow(t *testing.T) {
	h := startUI(t, askFor("write"))
	h.send("first\r")
	h.wait("? Allow Write dsh-demo-note.txt?", "writes need your approval", "+ Written by dsh's offline demo model.", "[y] allow once", "[a] allow for this session", "[n] deny")
	h.send("x") // ignored
	h.send("n")
	h.wait("Why not?")
	h.send("not now\r")
	h.wait("Denied", "denied by you", "reason: not now", "✻ ")
	if _, err := os.Stat(filepath.Join(h.cwd, "dsh-demo-note.txt")); err == nil {
		t.Fatal("a denied write happened")
	}
	var found bool
	for _, e := range h.events(session.TypeApprovalAnswer) {
		a, _ := session.Decode[session.ApprovalAnswer](e)
		found = found || (!a.Allow && a.Reason == "not now" && a.By == "user")
	}
	if !found {
		t.Fatal("no approval/answer with the reason")
	}
	// Typing goes back to the prompt after the question.
	h.send("second\r")
	h.wait("› second", "? Allow Write dsh-demo-note.txt?", "[a] allow for this session")
	h.send("a")
	h.wait("allowed for this session", "Write dsh-demo-note.txt")
	h.wait("✻ ")
	if _, err := os.Stat(filepath.Join(h.cwd, "dsh-demo-note.txt")); err != nil {
		t.Fatalf("an allowed write did not happen: %v", err)
	}
	h.exit()
}

// slowAdapter streams a word, then blocks until the request is cancelled.
type slowAdapter struct{}

func (slowAdapter) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	return func(yield func(llm.Chunk, error) bool) {
		if !yield(llm.StartChunk(0, llm.BlockText), nil) || !yield(llm.TextChunk(0, "Thinking hard about "+req.Model), nil) {
			return
		}
		<-ctx.Done()
		yield(llm.Chunk{}, context.Cause(ctx))
	}, nil
}

func TestRunModelSwitchSteerCancelAndDoubleCtrlC(t *testing.T) {
	h := startUI(t, func(a *app.App) {
		if _, err := a.Host.LLM.Register([]llm.ModelInfo{{ID: "slow/m"}}, slowAdapter{}); err != nil {
			t.Fatal(err)
		}
	})
	h.send("/model slow/m\r")
	h.wait("model set to slow/m")
	h.send("go\r")
	h.wait("› go", "Thinking hard about slow/m", "esc or ctrl-c to interrupt")
	h.send("and more\r")
	h.wait("queued: and more")
	h.send("\x03")
	h.wait("Thinking hard about slow/m", "(interrupted: the model sees what it had written so far)", "⏹ Interrupted · interrupted by user")
	// The queued steering never joined the turn: it is back in the editor,
	// and ctrl-c clears it.
	h.wait("› and more", "it is back in the editor")
	h.send("\x03")
	h.wait("› \r")
	h.send("\x03")
	h.wait("press ctrl-c again to exit")
	h.send("\x03")
	select {
	case err := <-h.done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a second ctrl-c did not exit")
	}
	var models []string
	for _, e := range h.events(session.TypeTurnEnd) {
		te, _ := session.Decode[session.TurnEnd](e)
		models = append(models, te.Reason.Kind+":"+te.Reason.Reason)
	}
	if len(models) == 0 || models[0] != "aborted:interrupted by user" {
		t.Fatalf("turn ends: %v", models)
	}
}

func TestRunCtrlDAndPendingApprovalOnExit(t *testing.T) {
	h := startUI(t, askFor("write"))
	h.send("go\r")
	h.wait("? Allow Write")
	// ctrl-c while asking: deny and interrupt.
	h.send("\x03")
	h.wait("⏹ Interrupted")
	h.send("typed\x15") // ctrl-u clears; ctrl-d on the empty line exits
	h.send("\x04")
	select {
	case err := <-h.done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ctrl-d did not exit")
	}
}

func TestScreenFrame(t *testing.T) {
	var s Screen
	f := s.Frame("", []string{"a", "> x"}, 1, 3, 0, 24)
	if f != "\x1b[?25l\r\x1b[K"+"a\r\n> x"+"\r\x1b[3C\x1b[?25h" {
		t.Fatalf("first frame %q", f)
	}
	f = s.Frame("out1\nout2\n", []string{"> "}, 0, 2, 0, 24)
	if f != "\x1b[?25l\r\x1b[1A\x1b[K\x1b[B\x1b[J\x1b[A"+"out1\x1b[K\r\nout2\x1b[K\r\n"+"> "+"\r\x1b[2C\x1b[?25h" {
		t.Fatalf("second frame %q", f)
	}
	// Taller than the terminal: the bottom rows stay.
	f = s.Frame("", []string{"1", "2", "3", "4", "5"}, 4, 0, 0, 3)
	if !strings.HasSuffix(f, "4\r\n5\r\x1b[?25h") || strings.Contains(f, "3") {
		t.Fatalf("clamped frame %q", f)
	}
	if c := s.Clear(); c != "\r\x1b[1A\x1b[K\x1b[B\x1b[J\x1b[A\x1b[?25h" {
		t.Fatalf("clear %q", c)
	}
}

func TestRunWithPermissionLayer(t *testing.T) {
	h := startUIWith(t, func(o *app.Options) { o.Config = testConfig(t) }, nil)
	h.send("go\r")
	h.wait("? Allow Bash ls -la | head -n 20", "[a] allow for this session")
	h.send("a")
	h.wait("allowed for this session", "total ")
	// The remembered answer covers the second listing; the write asks.
	h.wait("? Allow Write dsh-demo-note.txt?", "[y] allow once")
	h.send("y")
	h.wait("That was the whole loop", "✻ ")
	if _, err := os.Stat(filepath.Join(h.cwd, "dsh-demo-note.txt")); err != nil {
		t.Fatalf("the approved write did not happen: %v", err)
	}
	h.send("/permissions\r")
	h.wait("permission mode: default", "(session)")
	h.send("\x1b[Z") // shift-tab
	h.wait("permission mode: acceptEdits", "⏵⏵ accept edits")
	h.send("/permissions mode plan\r")
	h.wait("permission mode: plan", "⏸ plan mode")
	h.send("/permissions mode nope\r")
	h.wait(`unknown mode "nope"`)
	h.exit()
}

// testConfig is a configuration of the demo model and the given layers.
func testConfig(t *testing.T, layers ...settings.File) *settings.Config {
	t.Helper()
	c, err := settings.From(app.Schema(), true, append([]settings.File{providers.ModelKey.Flag("--model", "demo")}, layers...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestFooterShowsModeAndContextInEveryState(t *testing.T) {
	h := startUIWith(t, func(o *app.Options) { o.Config = testConfig(t) }, nil)
	h.wait("default mode (shift-tab)")
	h.send("go\r")
	// While a question is open the footer still names the mode.
	h.wait("? Allow Bash ls -la | head -n 20", "default mode (shift-tab) · answer with the key", "[y] allow once")
	h.send("y")
	h.wait("? Allow Write dsh-demo-note.txt?", "[y] allow once")
	h.send("y")
	h.wait("That was the whole loop", "✻ ")
	// Idle: the context used shows as a share of the demo model's window.
	h.wait("default mode (shift-tab) · ", " · context <1% · ")
	h.exit()
}

// Shift-tab cycles default → acceptEdits → plan; bypassPermissions takes
// a confirmation, any other key goes back to default, and settings that
// disable it keep shift-tab from offering it.
func TestShiftTabConfirmsBypass(t *testing.T) {
	h := startUIWith(t, func(o *app.Options) { o.Config = testConfig(t) }, nil)
	h.wait("default mode (shift-tab)")
	h.send("\x1b[Z")
	h.wait("⏵⏵ accept edits")
	h.send("\x1b[Z")
	h.wait("⏸ plan mode")
	h.send("\x1b[Z")
	h.wait("Switch to bypassPermissions?", "[y] switch to bypassPermissions")
	if m := h.app.Permission.Mode(); m != permission.ModePlan {
		t.Fatalf("mode %s before the confirmation", m)
	}
	h.send("x")
	h.wait("permission mode: default")
	if m := h.app.Permission.Mode(); m != permission.ModeDefault {
		t.Fatalf("mode %s after declining", m)
	}
	h.send("\x1b[Z\x1b[Z\x1b[Z")
	h.wait("Switch to bypassPermissions?")
	h.send("y")
	h.wait("⚠ bypass permissions")
	if m := h.app.Permission.Mode(); m != permission.ModeBypass {
		t.Fatalf("mode %s after confirming", m)
	}
	h.send("\x1b[Z")
	h.wait("permission mode: default")
	h.exit()

	h = startUIWith(t, func(o *app.Options) {
		o.Config = testConfig(t, permission.Key.Flag("--settings", permission.Settings{DisableBypassPermissionsMode: "disable"}))
	}, nil)
	h.wait("default mode (shift-tab)")
	h.send("\x1b[Z\x1b[Z")
	h.wait("⏸ plan mode")
	h.send("\x1b[Z")
	h.wait("permission mode: default")
	if strings.Contains(h.screen(), "Switch to bypassPermissions?") {
		t.Fatal("bypassPermissions was offered although settings disable it")
	}
	h.exit()
}

// "Always in this project" writes the offered rules (shown before the
// choice) to .dsh/settings.local.json, and they hold at once.
func TestApprovalAlwaysInThisProject(t *testing.T) {
	h := startUIWith(t, func(o *app.Options) { o.Config = testConfig(t) }, nil)
	h.send("go\r")
	h.wait("? Allow Bash ls -la | head -n 20", "rule: Bash(ls:*), Bash(head:*)", "[p] always in this project")
	h.send("p")
	h.wait("saved to ", ".dsh/settings.local.json: Bash(ls:*),", "total ")
	h.wait("? Allow Write dsh-demo-note.txt?", "[y] allow once")
	if n := len(h.events(session.TypeApprovalRequest)); n != 2 {
		t.Fatalf("the saved rules did not cover the second listing (%d questions)", n)
	}
	b, err := os.ReadFile(filepath.Join(h.cwd, ".dsh", "settings.local.json"))
	if err != nil || !strings.Contains(string(b), `"Bash(ls:*)"`) || !strings.Contains(string(b), `"Bash(head:*)"`) {
		t.Fatalf("settings.local.json: %s %v", b, err)
	}
	h.send("y")
	h.wait("That was the whole loop", "✻ ")
	h.send("/permissions\r")
	h.wait("Bash(ls:*)  (", "settings.local.json)")
	h.exit()
}

// A frame never erases the screen from the region's first column of its
// top line: when the region sits at the top of the screen (after a
// narrowing pushed its first lines off it, or after a clear), tmux takes
// that erase as clearing the whole screen and, with scroll-on-clear (its
// default), pushes the screen into the scrollback first: one copy of the
// region per frame. The first line is erased alone and the rest from the
// line below.
func TestScreenFrameNeverErasesFromTheTopCorner(t *testing.T) {
	var s Screen
	card := []string{"", "? Allow Bash printf", "  [y] allow once", "  footer"}
	s.Frame("", card, -1, 0, 60, 40)
	for i := range 3 {
		f := s.Frame("", card, -1, 0, 60, 40)
		climb := strings.Index(f, "\x1b[3A")
		if climb < 0 {
			t.Fatalf("frame %d does not climb the region: %q", i, f)
		}
		rest := f[climb+len("\x1b[3A"):]
		if !strings.HasPrefix(rest, "\x1b[K\x1b[B\x1b[J\x1b[A") {
			t.Fatalf("frame %d erases from the region's top-left corner: %q", i, rest)
		}
	}
	// So does handing the terminal over.
	if c := s.Clear(); strings.Contains(c, "A\x1b[J") {
		t.Fatalf("clear erases from the top-left corner: %q", c)
	}
}

// After a resize narrows the terminal, the next frame climbs every line the
// terminal rewrapped the old rows into, so none is left stale above.
func TestScreenFrameAfterNarrowing(t *testing.T) {
	var s Screen
	wide := strings.Repeat("x", 60)
	s.Frame("", []string{wide, wide, "> "}, 2, 2, 60, 40)
	// Two 60-column rows rewrap into two lines each at 45 columns.
	if f := s.Frame("", []string{"> "}, 0, 2, 45, 40); !strings.Contains(f, "\x1b[4A") {
		t.Fatalf("the frame after narrowing climbs %q, want 4 lines", f)
	}
	// Unchanged width: one line per row.
	s.Frame("", []string{wide, wide, "> "}, 2, 2, 60, 40)
	if f := s.Frame("", []string{"> "}, 0, 2, 60, 40); !strings.Contains(f, "\x1b[2A") || strings.Contains(f, "\x1b[4A") {
		t.Fatalf("same width: %q", f)
	}
}
