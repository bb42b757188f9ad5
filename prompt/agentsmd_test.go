//go:build unix

package prompt

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// build renders the prompt of a builder holding only dir's AGENTS.md
// section, failing the test if that does not finish promptly (a build that
// blocks on a FIFO or reads an endless device never would).
func build(t *testing.T, dir string) string {
	t.Helper()
	b := New()
	b.Section(AgentsMD(dir, 0))
	done := make(chan string, 1)
	go func() {
		a, err := b.Build(context.Background())
		if err != nil {
			done <- "ERROR: " + err.Error()
			return
		}
		done <- a.Render(context.Background())
	}()
	select {
	case s := <-done:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("prompt build hung")
		return ""
	}
}

func projectDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestAgentsMDRegularFileAndChange(t *testing.T) {
	dir := projectDir(t)
	if got := build(t, dir); got != "" {
		t.Fatalf("no AGENTS.md: %q", got)
	}
	name := filepath.Join(dir, "AGENTS.md")
	writeFile(t, name, "Run the tests.\n")
	if got := build(t, dir); got != "Project instructions from "+name+":\n\nRun the tests." {
		t.Fatalf("got %q", got)
	}
	// A cached section notices a change.
	b := New()
	b.Section(AgentsMD(dir, 0))
	render := func() string {
		a, err := b.Build(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return a.Render(context.Background())
	}
	if !strings.Contains(render(), "Run the tests.") {
		t.Fatal("first render")
	}
	writeFile(t, name, "Never commit, ever.\n")
	if s := render(); !strings.Contains(s, "Never commit") || strings.Contains(s, "Run the tests") {
		t.Fatalf("after change: %q", s)
	}
}

// A FIFO named AGENTS.md must neither block the open nor the read.
func TestAgentsMDFIFO(t *testing.T) {
	dir := projectDir(t)
	if err := syscall.Mkfifo(filepath.Join(dir, "AGENTS.md"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if got := build(t, dir); got != "" {
		t.Fatalf("FIFO produced %q", got)
	}
}

// A symlink to a device (endless /dev/zero) is neither followed out of the
// project nor read.
func TestAgentsMDDevice(t *testing.T) {
	dir := projectDir(t)
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	if got := build(t, dir); got != "" {
		t.Fatalf("device produced %d bytes", len(got))
	}
}

// A symlink to a file outside the project (a private key, say) does not put
// that file into the system prompt.
func TestAgentsMDSymlinkOutsideProject(t *testing.T) {
	outside := projectDir(t)
	secret := filepath.Join(outside, "id_rsa")
	writeFile(t, secret, "-----BEGIN OPENSSH PRIVATE KEY-----\n")
	dir := projectDir(t)
	if err := os.Symlink(secret, filepath.Join(dir, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	if got := build(t, dir); got != "" {
		t.Fatalf("outside file included: %q", got)
	}
	// Relative, through "..", is outside as well.
	sub := filepath.Join(dir, "pkg")
	writeFile(t, filepath.Join(dir, "notes.md"), "parent notes")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../notes.md", filepath.Join(sub, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	if got := build(t, sub); got != "" {
		t.Fatalf("file above the project included: %q", got)
	}
}

// A symlink to a file inside the project is followed.
func TestAgentsMDSymlinkInsideProject(t *testing.T) {
	dir := projectDir(t)
	writeFile(t, filepath.Join(dir, "docs", "agents.md"), "Use tabs.\n")
	if err := os.Symlink("docs/agents.md", filepath.Join(dir, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	if got := build(t, dir); !strings.HasSuffix(got, "\n\nUse tabs.") {
		t.Fatalf("got %q", got)
	}
}

// An oversized file is cut at MaxAgentsMD (on a rune boundary) with a note.
func TestAgentsMDTruncated(t *testing.T) {
	dir := projectDir(t)
	head := strings.Repeat("a", MaxAgentsMD-1) + "é" // é straddles the cap
	writeFile(t, filepath.Join(dir, "AGENTS.md"), head+strings.Repeat("z", 1<<20))
	got := build(t, dir)
	if strings.Contains(got, "z") || strings.Contains(got, "é") || !strings.Contains(got, strings.Repeat("a", MaxAgentsMD-1)) {
		t.Fatalf("cut at the wrong place (len %d)", len(got))
	}
	if !strings.Contains(got, "[AGENTS.md truncated: only its first 256 KiB of 1310721 bytes are included]") {
		t.Fatalf("no truncation note: %q", got[len(got)-200:])
	}
	if len(got) > MaxAgentsMD+1024 {
		t.Fatalf("section is %d bytes", len(got))
	}
}

// Concurrent builds share one section safely (run with -race).
func TestAgentsMDConcurrentBuilds(t *testing.T) {
	dir := projectDir(t)
	writeFile(t, filepath.Join(dir, "AGENTS.md"), "Be brief.\n")
	b := New()
	b.Section(AgentsMD(dir, 0))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			a, err := b.Build(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			if !strings.Contains(a.Render(context.Background()), "Be brief.") {
				t.Error("missing section")
			}
		})
	}
	wg.Wait()
}
