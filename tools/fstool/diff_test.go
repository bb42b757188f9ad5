package fstool

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dshq/dsh/tool"
)

func lines(n int, change map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if s, ok := change[i]; ok {
			b.WriteString(s + "\n")
			continue
		}
		fmt.Fprintf(&b, "line%d\n", i)
	}
	return b.String()
}

func TestFileDiffsExamples(t *testing.T) {
	eight := lines(8, nil)
	cases := []struct {
		name, before, after string
		want                []tool.FileDiff
	}{
		{"one change with context", eight, lines(8, map[int]string{4: "CHANGED"}), []tool.FileDiff{{
			Path:    "f",
			OldText: ptr("line1\nline2\nline3\nline4\nline5\nline6\nline7"),
			NewText: "line1\nline2\nline3\nCHANGED\nline5\nline6\nline7",
		}}},
		{"create", "", "brand new\n", []tool.FileDiff{{Path: "f", NewText: "brand new"}}},
		{"delete all", "gone\n", "", []tool.FileDiff{{Path: "f", OldText: ptr("gone"), NewText: ""}}},
		{"no newline", "x", "y", []tool.FileDiff{{Path: "f", OldText: ptr("x"), NewText: "y"}}},
		{"newline added", "x", "x\n", []tool.FileDiff{{Path: "f", OldText: ptr("x"), NewText: "x"}}},
		{"identical", eight, eight, nil},
		{"far apart: two hunks", lines(20, nil), lines(20, map[int]string{3: "A", 16: "B"}), []tool.FileDiff{
			{Path: "f", OldText: ptr("line1\nline2\nline3\nline4\nline5\nline6"), NewText: "line1\nline2\nA\nline4\nline5\nline6"},
			{Path: "f", OldText: ptr("line13\nline14\nline15\nline16\nline17\nline18\nline19"),
				NewText: "line13\nline14\nline15\nB\nline17\nline18\nline19"},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _ := fileDiffs("f", c.before, c.after)
			if !equalDiffs(got, c.want) {
				t.Fatalf("got %s\nwant %s", show(got), show(c.want))
			}
		})
	}
}

// TestHunkMerging pins the merge rule: at most 6 unchanged lines between
// two changes (twice the context) give one hunk; 7 give two.
func TestHunkMerging(t *testing.T) {
	for gap, want := range map[int]int{5: 1, 6: 1, 7: 2, 8: 2} {
		after := lines(30, map[int]string{5: "A", 5 + gap + 1: "B"})
		got, _ := fileDiffs("f", lines(30, nil), after)
		if len(got) != want {
			t.Errorf("gap %d: %d hunks, want %d", gap, len(got), want)
		}
	}
}

func TestUnifiedDiff(t *testing.T) {
	_, u := fileDiffs("f", "a\nb\nc", "a\nB\nc\nd\n")
	want := "--- f\n+++ f\n@@ -1,3 +1,4 @@\n a\n-b\n-c\n\\ No newline at end of file\n+B\n+c\n+d\n"
	if u != want {
		t.Fatalf("unified:\n%s\nwant:\n%s", u, want)
	}
	_, u = fileDiffs("f", "", "x\n")
	if u != "--- f\n+++ f\n@@ -0,0 +1 @@\n+x\n" {
		t.Fatalf("create:\n%s", u)
	}
}

// TestDiffHunksAreFound checks on random inputs that the hunks' old and
// new texts are found in the two texts (the edit script itself is tested
// in internal/textdiff).
func TestDiffHunksAreFound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	vocab := []string{"a\n", "b\n", "c\n", "d\n", "{\n", "}\n", "\n", "e"}
	gen := func() []string {
		out := make([]string, rng.IntN(40))
		for i := range out {
			out[i] = vocab[rng.IntN(len(vocab)-1)] // "e" (no newline) only last, below
		}
		if len(out) > 0 && rng.IntN(3) == 0 {
			out[len(out)-1] = "e"
		}
		return out
	}
	for range 500 {
		before, after := strings.Join(gen(), ""), strings.Join(gen(), "")
		ds, _ := fileDiffs("f", before, after)
		for _, d := range ds {
			if d.OldText != nil && !strings.Contains(before, *d.OldText) || !strings.Contains(after, d.NewText) {
				t.Fatalf("hunk text not in its side: %s", show([]tool.FileDiff{d}))
			}
		}
	}
}

// TestDiffLargeRewriteFallsBack: beyond the edit-distance bound the result
// is a single hunk, and a diff too big to record is omitted.
func TestDiffLargeRewriteFallsBack(t *testing.T) {
	var a, b []string
	for i := range 5000 {
		a = append(a, fmt.Sprintf("old %d\n", i))
		b = append(b, fmt.Sprintf("new %d\n", i))
	}
	ds, _ := fileDiffs("f", strings.Join(a, ""), strings.Join(b, ""))
	if len(ds) != 1 {
		t.Fatalf("%d hunks", len(ds))
	}
	// Too big to record: omitted.
	big := strings.Repeat("x\n", maxDiffBytes/2) // "+x\n" in the diff: 1.5 MiB
	if ds, u := fileDiffs("f", "", big); ds != nil || u != "" {
		t.Fatal("oversized diff recorded")
	}
}

func show(ds []tool.FileDiff) string {
	var b strings.Builder
	for _, d := range ds {
		old := "<nil>"
		if d.OldText != nil {
			old = fmt.Sprintf("%q", *d.OldText)
		}
		fmt.Fprintf(&b, "{%s old=%s new=%q} ", d.Path, old, d.NewText)
	}
	return b.String()
}
