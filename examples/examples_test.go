// Package examples_test builds every example and runs it, checking its
// output, so the how-to guides in docs/architecture.md keep working. When
// the tests run with -race, the examples are built with -race too.
package examples_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "dsh-examples-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type built struct {
	once sync.Once
	bin  string
	err  error
}

var (
	buildsMu sync.Mutex
	builds   = map[string]*built{}
)

// build compiles ./<name> once per test binary and returns the executable.
func build(t *testing.T, name string) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	buildsMu.Lock()
	b := builds[name]
	if b == nil {
		b = &built{}
		builds[name] = b
	}
	buildsMu.Unlock()
	b.once.Do(func() {
		bin := filepath.Join(binDir, name)
		args := []string{"build", "-o", bin}
		if raceEnabled {
			args = append(args, "-race")
		}
		out, err := exec.Command(gobin, append(args, "./"+name)...).CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build ./%s: %v\n%s", name, err, out)
			return
		}
		b.bin = bin
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

// run executes bin with stdin and returns its stdout, failing on a non-zero
// exit or anything on stderr (a race report, a panic).
func run(t *testing.T, bin, stdin string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(bin), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

var spaces = regexp.MustCompile(`[ \t]+`)

// expect checks that out contains each want, in order, with runs of blanks
// compared as one space.
func expect(t *testing.T, out string, wants ...string) {
	t.Helper()
	norm := spaces.ReplaceAllString(out, " ")
	rest := norm
	for _, w := range wants {
		i := strings.Index(rest, spaces.ReplaceAllString(w, " "))
		if i < 0 {
			t.Fatalf("output lacks %q (after the earlier expectations); full output:\n%s", w, out)
		}
		rest = rest[i+len(w):]
	}
}

func TestToolPlugin(t *testing.T) {
	t.Parallel()
	out := run(t, build(t, "toolplugin"), "")
	expect(t, out,
		`turn/start {"turn":1,"trigger":{"kind":"message","source":{"kind":"user"}}}`,
		`user/message How many words are in 'the quick brown fox'?`,
		`assistant/message call word_count {"text":"the quick brown fox"}`,
		`tool/call word_count {"text":"the quick brown fox"}`,
		`tool/result 4 words`,
		`assistant/chunk text-delta "It "`,
		`assistant/message text "It has 4 words."`,
		`turn/end reason completed`,
		`tool schema: {"name":"word_count"`,
		`"required":["text"]`,
	)
}

func TestListenerPlugin(t *testing.T) {
	t.Parallel()
	out := run(t, build(t, "listener"), "")
	expect(t, out,
		// The rewrite: effective arguments, the original beside them, and who changed them.
		`"arguments":"{\"command\":\"git push --force-with-lease origin main\"}"`,
		`"originalArguments":"{\"command\":\"git push --force origin main\"}"`,
		`"rewrittenBy":"listener"`,
		`tool/result would run: git push --force-with-lease origin main (error: false)`,
		// The denial.
		`tool/result Error: refusing to delete the filesystem root (error: true)`,
		// The blocked prompt never reaches the model.
		`prompt/blocked: prompts must not contain passwords`,
		`turn/end (rejected)`,
		// History shows the call that ran.
		`shell {"command":"git push --force-with-lease origin main"}`,
		`The model was called 4 times for 3 prompts.`,
	)
	if strings.Contains(out, `shell {"command":"git push --force origin main"}`) {
		t.Errorf("the model's history still shows the original call:\n%s", out)
	}
}

func TestFrontendApproved(t *testing.T) {
	t.Parallel()
	out := run(t, build(t, "frontend"), "y\n")
	expect(t, out,
		`[running]`,
		`Let me clean that up.`,
		`● delete_file {"path":"draft.txt"}`,
		`? deleting files needs your approval — allow delete_file {"path":"draft.txt"}? [y/N]`,
		`approval: allowed by user`,
		`└ deleted draft.txt`,
		`Done: draft.txt is gone.`,
		`[idle]`,
		`turn ended: completed`,
	)
}

func TestFrontendDenied(t *testing.T) {
	t.Parallel()
	out := run(t, build(t, "frontend"), "n\n")
	expect(t, out,
		`approval: denied by user`,
		`└ The user denied this tool call.`,
		`Understood, I left draft.txt alone.`,
		`turn ended: completed`,
	)
	if strings.Contains(out, "deleted draft.txt") {
		t.Errorf("the tool ran although the user said no:\n%s", out)
	}
}

func TestEmbed(t *testing.T) {
	t.Parallel()
	out := run(t, build(t, "embed"), "")
	expect(t, out,
		`Let me count them.`,
		`● word_count {"text":"the quick brown fox"}`,
		`approval: allow=true by embed`,
		`└ 4 words`,
		`The sentence has 4 words.`,
		`[completed after 2 steps, 30 output tokens]`,
	)
	src, err := os.ReadFile(filepath.Join("embed", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	body := string(src)[strings.Index(string(src), "\nfunc main() {"):]
	if n := strings.Count(body[:strings.Index(body, "\n}\n")+3], "\n") - 1; n >= 40 {
		t.Errorf("examples/embed's main is %d lines; the example promises under 40", n)
	}
}
