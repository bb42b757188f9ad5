package textdiff

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestScriptsAreValid checks on random inputs that the edit script
// rebuilds both sides and is minimal (the Myers search completes on inputs
// this small).
func TestScriptsAreValid(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	vocab := []string{"a\n", "b\n", "c\n", "d\n", "{\n", "}\n", "\n", "e"}
	gen := func() []string {
		out := make([]string, rng.IntN(40))
		for i := range out {
			out[i] = vocab[rng.IntN(len(vocab)-1)]
		}
		if len(out) > 0 && rng.IntN(3) == 0 {
			out[len(out)-1] = "e"
		}
		return out
	}
	for range 500 {
		a, b := gen(), gen()
		ops := Lines(a, b)
		var ra, rb []string
		changes := 0
		for _, o := range ops {
			if o.Kind != Insert {
				ra = append(ra, o.Line)
			}
			if o.Kind != Delete {
				rb = append(rb, o.Line)
			}
			if o.Kind != Equal {
				changes++
			}
		}
		if strings.Join(ra, "") != strings.Join(a, "") || strings.Join(rb, "") != strings.Join(b, "") {
			t.Fatalf("script does not rebuild:\na=%q\nb=%q\nops=%v", a, b, ops)
		}
		if lcs := lcsLen(a, b); changes != len(a)+len(b)-2*lcs {
			t.Fatalf("not minimal: %d changes, want %d\na=%q\nb=%q", changes, len(a)+len(b)-2*lcs, a, b)
		}
	}
}

func lcsLen(a, b []string) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}

// TestLargeRewriteFallsBack: beyond the edit-distance bound the result is
// a single replacement, still correct, and fast.
func TestLargeRewriteFallsBack(t *testing.T) {
	var a, b []string
	for i := range 5000 {
		a = append(a, fmt.Sprintf("old %d\n", i))
		b = append(b, fmt.Sprintf("new %d\n", i))
	}
	ops := Lines(a, b)
	if len(ops) != 10000 || ops[0].Kind != Delete || ops[9999].Kind != Insert {
		t.Fatalf("ops = %d, first %c, last %c", len(ops), ops[0].Kind, ops[len(ops)-1].Kind)
	}
}

func TestUnified(t *testing.T) {
	u := Unified("a/f", "b/f", "a\nb\nc", "a\nB\nc\nd\n")
	want := "--- a/f\n+++ b/f\n@@ -1,3 +1,4 @@\n a\n-b\n-c\n\\ No newline at end of file\n+B\n+c\n+d\n"
	if u != want {
		t.Fatalf("unified:\n%s\nwant:\n%s", u, want)
	}
	if u := Unified("/dev/null", "f", "", "x\n"); u != "--- /dev/null\n+++ f\n@@ -0,0 +1 @@\n+x\n" {
		t.Fatalf("create:\n%s", u)
	}
	if Unified("f", "f", "same", "same") != "" {
		t.Fatal("equal texts have a diff")
	}
}
