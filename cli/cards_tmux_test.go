package cli

import (
	"fmt"
	"strings"
	"testing"
)

// The small defects of issue 25 through the real binary and its real
// tools: a read card counts the file's 12 lines (not the read tool's
// header and footer around them), a failed command's exit code is said
// once, the task card is titled by its description (not its raw
// arguments), and /cost of a one-turn session says "1 turn".
func TestToolCardsInTmux(t *testing.T) {
	f := newTermFixture(t, "",
		chatTool("c1", "read", map[string]string{"file_path": "main.go"}),
		chatTool("c2", "bash", map[string]string{"command": "echo failing; exit 3", "description": "Fail on purpose"}),
		chatTool("c3", "task", map[string]string{"description": "Survey the code", "prompt": "List what the repository holds."}),
		chatText("The repository is empty.", 30, 5), // the child's answer
		chatText("All done.", 40, 3),
	)
	var src strings.Builder
	src.WriteString("package main\n")
	for i := 2; i <= 12; i++ {
		fmt.Fprintf(&src, "// line %d\n", i)
	}
	f.write(t, "main.go", src.String())
	tt := f.tmux(t, "--trust", "--dangerously-skip-permissions")
	tt.waitFor("local/m", "›")
	tt.text("go")
	tt.keys("Enter")
	s := tt.waitFor("All done.", "4 steps")
	if l := lineAfter(s, "● Read main.go"); strings.TrimSpace(l) != "⎿ 12 lines" {
		t.Errorf("the read card under %q says %q, want ⎿ 12 lines", "● Read main.go", l)
	}
	if n := strings.Count(s, "exit code"); n != 1 || strings.Contains(s, "[exit code: 3]") || !strings.Contains(s, "    exit code 3") {
		t.Errorf("the failed command's exit code is said %d times", n)
	}
	if l := lineWith(s, "● Task "); !strings.HasPrefix(strings.TrimSpace(l), "● Task Survey the code ·") || strings.Contains(l, "prompt=") {
		t.Errorf("the task card is titled %q", l)
	}
	if t.Failed() {
		t.Fatalf("screen:\n%s", s)
	}
	// One turn is "1 turn".
	tt.text("/cost")
	tt.keys("Enter")
	tt.waitFor("this session (1 turn)")
	tt.text("/exit")
	tt.keys("Enter")
	tt.waitFor("DSH-EXITED:0")
}

// lineAfter is the line of s after the first one holding sub.
func lineAfter(s, sub string) string {
	ls := strings.Split(s, "\n")
	for i, l := range ls {
		if strings.Contains(l, sub) && i+1 < len(ls) {
			return ls[i+1]
		}
	}
	return ""
}
