package transcript_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/bash/local"
	"github.com/dshq/dsh/core"
	fslocal "github.com/dshq/dsh/fs/local"
	"github.com/dshq/dsh/hooks/transcript"
	"github.com/dshq/dsh/internal/ownership"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tools/bashtool"
	"github.com/dshq/dsh/tools/fstool"
)

// run executes a scripted turn with real tools and returns the session and
// the writer that recorded it.
func run(t *testing.T) (*session.Session, *transcript.Writer, string) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h, err := core.New(core.Options{Invariants: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	ex, err := local.New(local.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h.Scope.Defer(ex.Close)
	fsp, _ := fslocal.New(fslocal.Options{Cwd: dir})
	if err := h.Tools.RegisterAll(h.Scope, append(bashtool.Tools(ex, bashtool.Options{}), fstool.Tools(fsp, nil, fstool.Options{})...)...); err != nil {
		t.Fatal(err)
	}
	m := scripted.New(
		scripted.Call("t1", "write", map[string]any{"file_path": "notes.txt", "content": "hello\n"}, "Writing it."),
		scripted.Call("t2", "bash", map[string]any{"command": "cat notes.txt", "description": "show"}, ""),
		scripted.Text("Done. MARKER-42"),
	)
	if _, err := h.LLM.RegisterModels([]string{"mock"}, m); err != nil {
		t.Fatal(err)
	}
	w := transcript.New(filepath.Join(t.TempDir(), "transcripts"), "9.9.9", nil)
	if err := w.Install(h.Scope, h.Sessions); err != nil {
		t.Fatal(err)
	}
	hd, err := h.Agents.Create(context.Background(), agent.CreateOptions{AgentID: "a", Header: session.Header{Cwd: dir}, Options: agent.Options{Model: "mock"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := hd.Agent.Send(ctx, []llm.Block{llm.Text("write a note")}, llm.Source{}); err != nil {
		t.Fatal(err)
	}
	if err := hd.Agent.WhenIdle(ctx); err != nil {
		t.Fatal(err)
	}
	return hd.Agent.Session(), w, dir
}

func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line is not JSON: %q", sc.Text())
		}
		out = append(out, m)
	}
	return out
}

// The transcript has Claude Code's lines: a chain of uuids, the session's
// id and cwd, Anthropic content blocks with Claude tool names and
// absolute paths, tool results with toolUseResult.
func TestTranscriptShape(t *testing.T) {
	s, w, dir := run(t)
	path := w.Path(s.ID())
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("transcript mode %v, want 0600", st.Mode().Perm())
	}
	lines := readLines(t, path)
	var kinds []string
	prev := any(nil)
	for i, l := range lines {
		kinds = append(kinds, l["type"].(string))
		if l["parentUuid"] != prev {
			t.Errorf("line %d: parentUuid %v, want %v", i, l["parentUuid"], prev)
		}
		prev = l["uuid"]
		if l["sessionId"] != string(s.ID()) || l["cwd"] != dir || l["version"] != "9.9.9" || l["isSidechain"] != false || l["userType"] != "external" {
			t.Errorf("line %d envelope: %v", i, l)
		}
		if _, err := time.Parse("2006-01-02T15:04:05.000Z", l["timestamp"].(string)); err != nil {
			t.Errorf("line %d timestamp %v", i, l["timestamp"])
		}
	}
	want := "user assistant assistant user assistant user assistant"
	if got := strings.Join(kinds, " "); got != want {
		t.Fatalf("line types %q, want %q", got, want)
	}
	if c := lines[0]["message"].(map[string]any)["content"]; c != "write a note" {
		t.Errorf("prompt content %v", c)
	}
	use := lines[2]["message"].(map[string]any)["content"].([]any)[0].(map[string]any)
	if use["type"] != "tool_use" || use["name"] != "Write" || use["input"].(map[string]any)["file_path"] != filepath.Join(dir, "notes.txt") {
		t.Errorf("tool_use %v", use)
	}
	if r := lines[3]["toolUseResult"].(map[string]any); r["filePath"] != filepath.Join(dir, "notes.txt") || r["type"] != "create" {
		t.Errorf("write toolUseResult %v", r)
	}
	if r := lines[5]["toolUseResult"].(map[string]any); r["stdout"] != "hello\n" {
		t.Errorf("bash toolUseResult %v", r)
	}
	// The lines a Stop hook greps for are compact JSON, one per block.
	b, _ := os.ReadFile(path)
	last := ""
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, `"role":"assistant"`) {
			last = l
		}
	}
	if !strings.Contains(last, "MARKER-42") {
		t.Errorf("the last assistant line lacks the final answer: %s", last)
	}
}

// A session that goes live again (resume) gets its transcript rewritten
// from the log: the same lines, the same ids, nothing twice.
func TestTranscriptSurvivesResume(t *testing.T) {
	s, w, _ := run(t)
	before, err := os.ReadFile(w.Path(s.ID()))
	if err != nil {
		t.Fatal(err)
	}
	live := session.NewLive(nil)
	scope := kernel.NewScope("resume")
	defer scope.Close()
	w2 := transcript.New(filepath.Dir(w.Path(s.ID())), "9.9.9", nil)
	if err := w2.Install(scope, live); err != nil {
		t.Fatal(err)
	}
	again, err := live.Create(context.Background(), scope, s.ID(), session.Options{Header: s.Header(), Seed: s.Events()})
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(w.Path(s.ID()))
	if !bytes.Equal(before, after) {
		t.Fatalf("the rewrite differs:\n%s\n---\n%s", before, after)
	}
	// A new event appends after what was there.
	if _, err := again.Writer(ownership.Fixtures).AppendSurface(context.Background(), session.TypeContextMessage, session.Prompt{Content: []llm.Block{llm.Text("later")}}, session.AppendOp, nil); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, w.Path(s.ID()))
	n := len(bytes.Split(bytes.TrimSpace(before), []byte("\n")))
	if len(lines) != n+1 || lines[n]["isMeta"] != true || lines[n]["parentUuid"] != lines[n-1]["uuid"] {
		t.Fatalf("appended line: %v", lines[len(lines)-1])
	}
}

// jq, the tool hook scripts use, reads the transcript the way the Ralph
// loop's Stop hook does (the last text block of the last assistant lines).
func TestTranscriptReadsWithJq(t *testing.T) {
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("jq is not installed (scripts/test.sh installs it)")
	}
	s, w, _ := run(t)
	cmd := exec.Command("bash", "-c", `grep '"role":"assistant"' "$1" | tail -n 100 | jq -rs 'map(.message.content[]? | select(.type == "text") | .text) | last // ""'`, "x", w.Path(s.ID()))
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "Done. MARKER-42" {
		t.Fatalf("jq read %q (%v)", out, err)
	}
}

// resumeInto makes s live again under a new writer on dir, appends one
// event after the seed, and returns the transcript, what was logged, the
// file's inode before the append, and what a full rewrite of the resumed
// log gives.
func resumeInto(t *testing.T, dir string, s *session.Session) ([]byte, string, uint64, []byte, *session.Session) {
	t.Helper()
	var logged bytes.Buffer
	live := session.NewLive(nil)
	scope := kernel.NewScope("resume")
	defer scope.Close()
	w := transcript.New(dir, "9.9.9", slog.New(slog.NewTextHandler(&logged, nil)))
	if err := w.Install(scope, live); err != nil {
		t.Fatal(err)
	}
	again, err := live.Create(context.Background(), scope, s.ID(), session.Options{Header: s.Header(), Seed: s.Events()})
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(w.Path(s.ID()))
	if err != nil {
		t.Fatal(err)
	}
	ino := st.Sys().(*syscall.Stat_t).Ino
	if _, err := again.Writer(ownership.Fixtures).AppendSurface(context.Background(), session.TypeContextMessage, session.Prompt{Content: []llm.Block{llm.Text("later")}}, session.AppendOp, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(w.Path(s.ID()))
	if err != nil {
		t.Fatal(err)
	}
	fresh := transcript.New(t.TempDir(), "9.9.9", nil)
	live2, scope2 := session.NewLive(nil), kernel.NewScope("fresh")
	defer scope2.Close()
	if err := fresh.Install(scope2, live2); err != nil {
		t.Fatal(err)
	}
	if _, err := live2.Create(context.Background(), scope2, s.ID(), session.Options{Header: s.Header(), Seed: again.Events()}); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(fresh.Path(s.ID()))
	if err != nil {
		t.Fatal(err)
	}
	return b, logged.String(), ino, want, again
}

// A resume appends after the mark the last turn end recorded, and the
// result is byte for byte what a rewrite from the log gives: lines a crash
// left after the mark are cut, a torn mark or a changed file is rewritten
// (and the log says why).
func TestTranscriptResumeAppends(t *testing.T) {
	s, w, _ := run(t)
	dir := filepath.Dir(w.Path(s.ID()))
	path := w.Path(s.ID())
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	ino := st.Sys().(*syscall.Stat_t).Ino
	if _, why, _, _, _ := resumeInto(t, t.TempDir(), s); why != "" { // no transcript yet: a full write
		t.Fatalf("a new transcript logged %q", why)
	}
	// A new transcript in a directory not made yet (it is created in
	// place, and the directory on the way).
	if got, why, _, want, _ := resumeInto(t, filepath.Join(t.TempDir(), "not", "yet"), s); why != "" || !bytes.Equal(got, want) {
		t.Fatalf("a new transcript in a new directory logged %q and differs from a rewrite:\n%s\n---\n%s", why, got, want)
	}
	// A crash left half a line after the mark.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"parentUuid":"torn`)
	f.Close()
	got, why, ino2, want, _ := resumeInto(t, dir, s)
	if !bytes.Equal(got, want) {
		t.Fatalf("the continued transcript differs from a rewrite:\n%s\n---\n%s", got, want)
	}
	if why != "" || ino2 != ino {
		t.Fatalf("the resume rewrote the transcript (log %q, inode %d → %d)", why, ino, ino2)
	}

	for _, c := range []struct {
		name, reason string
		spoil        func()
	}{
		{"torn mark", "mark is torn", func() {
			marks, _ := filepath.Glob(filepath.Join(dir, ".*.mark"))
			if len(marks) != 1 {
				t.Fatalf("marks: %v", marks)
			}
			b, _ := os.ReadFile(marks[0])
			os.WriteFile(marks[0], b[:len(b)/2], 0o600)
		}},
		{"changed last line", "line at the mark", func() {
			b, _ := os.ReadFile(path)
			os.WriteFile(path, bytes.Replace(b, []byte(`"uuid":"`), []byte(`"uuid":"x`), -1), 0o600)
		}},
		{"no mark", "has no mark", func() {
			marks, _ := filepath.Glob(filepath.Join(dir, ".*.mark"))
			if len(marks) != 1 {
				t.Fatalf("marks: %v", marks)
			}
			os.Remove(marks[0])
		}},
		{"shorter file", "shorter", func() {
			b, _ := os.ReadFile(path)
			os.WriteFile(path, b[:len(b)/2], 0o600)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Start each case from a good mark: a first resume records it
			// on close.
			_, _, _, _, s := resumeInto(t, dir, s)
			c.spoil()
			got, why, _, want, _ := resumeInto(t, dir, s)
			if !bytes.Equal(got, want) {
				t.Fatalf("the rewritten transcript differs:\n%s\n---\n%s", got, want)
			}
			if !strings.Contains(why, "rewriting the whole transcript") || !strings.Contains(why, c.reason) {
				t.Fatalf("the log says %q, want the rewrite and %q", why, c.reason)
			}
		})
	}
}
