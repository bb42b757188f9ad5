// Package textdiff computes line diffs: a Myers shortest edit script,
// bounded so a huge rewrite degrades to one replacement instead of running
// long, grouped into hunks with context and printed as a unified diff. The
// file tools show their changes with it and a rewind's dry run prints what
// it would change.
package textdiff

import (
	"fmt"
	"strings"
)

const (
	// Context is the number of unchanged lines shown around a change;
	// changes separated by at most twice as many unchanged lines share a hunk.
	Context = 3
	// maxEditDistance and diffWork bound the Myers search (time
	// O((N+M)·D), memory O(D²)): the distance searched is at most
	// maxEditDistance and at most diffWork/(N+M). Beyond it the changed
	// region is reported as one replacement: still a correct diff, just not
	// a minimal one, which is all a UI needs for a rewrite of that size.
	maxEditDistance = 1000
	diffWork        = 50_000_000
)

// Kind is one step of an edit script.
type Kind byte

const (
	Equal  Kind = ' '
	Delete Kind = '-'
	Insert Kind = '+'
)

// Op is one line of an edit script; the line keeps its "\n" (if it has
// one), so "x" and "x\n" differ, as they do in a unified diff.
type Op struct {
	Kind Kind
	Line string
}

// Hunk is one group of changes with its context.
type Hunk struct {
	OldStart, OldLines int // 1-based start; start is the line before when oldLines is 0
	NewStart, NewLines int
	Ops                []Op
}

// Split splits s after each "\n"; the last line may lack one.
func Split(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// Lines returns an edit script turning a into b.
func Lines(a, b []string) []Op {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ops := make([]Op, 0, len(a)+len(b)-pre-suf)
	for _, l := range a[:pre] {
		ops = append(ops, Op{Equal, l})
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	if mid, ok := myers(ma, mb); ok {
		ops = append(ops, mid...)
	} else {
		for _, l := range ma {
			ops = append(ops, Op{Delete, l})
		}
		for _, l := range mb {
			ops = append(ops, Op{Insert, l})
		}
	}
	for _, l := range a[len(a)-suf:] {
		ops = append(ops, Op{Equal, l})
	}
	return ops
}

// myers is Myers' O(ND) shortest edit script. It reports false when the
// edit distance exceeds maxEditDistance. Deletions come before insertions
// within a change, as in diff(1).
func myers(a, b []string) ([]Op, bool) {
	n, m := len(a), len(b)
	if n == 0 && m == 0 {
		return nil, true
	}
	maxD := min(n+m, maxEditDistance, max(16, diffWork/(n+m)))
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	// trace[d] holds v[k] for k in [-d-1, d+1] as it was before step d.
	var trace [][]int
	found := false
	for d := 0; d <= maxD && !found; d++ {
		trace = append(trace, append([]int(nil), v[off-d-1:off+d+2]...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1] // down: insertion
			} else {
				x = v[off+k-1] + 1 // right: deletion
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				found = true
				break
			}
		}
	}
	if !found {
		return nil, false
	}
	// Backtrack from (n, m), collecting ops in reverse.
	var rev []Op
	x, y := n, m
	for d := len(trace) - 1; d >= 0; d-- {
		tv := trace[d]
		at := func(k int) int { return tv[k+d+1] }
		k := x - y
		var pk int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := at(pk)
		py := px - pk
		for x > px && y > py {
			rev = append(rev, Op{Equal, a[x-1]})
			x, y = x-1, y-1
		}
		if d > 0 {
			if x == px {
				rev = append(rev, Op{Insert, b[y-1]})
			} else {
				rev = append(rev, Op{Delete, a[x-1]})
			}
		}
		x, y = px, py
	}
	ops := make([]Op, len(rev))
	for i, o := range rev {
		ops[len(rev)-1-i] = o
	}
	return normalizeOrder(ops), true
}

// normalizeOrder moves insertions after the deletions of the same change, so
// a replaced block reads "-old… +new…".
func normalizeOrder(ops []Op) []Op {
	out := make([]Op, 0, len(ops))
	for i := 0; i < len(ops); {
		if ops[i].Kind == Equal {
			out = append(out, ops[i])
			i++
			continue
		}
		j := i
		for j < len(ops) && ops[j].Kind != Equal {
			j++
		}
		for _, o := range ops[i:j] {
			if o.Kind == Delete {
				out = append(out, o)
			}
		}
		for _, o := range ops[i:j] {
			if o.Kind == Insert {
				out = append(out, o)
			}
		}
		i = j
	}
	return out
}

// Hunks groups an edit script into hunks with Context lines of context.
func Hunks(ops []Op) []Hunk {
	var out []Hunk
	oldLine, newLine := 1, 1 // line numbers of ops[i] on each side
	type pos struct{ old, new int }
	at := make([]pos, len(ops))
	for i, o := range ops {
		at[i] = pos{oldLine, newLine}
		if o.Kind != Insert {
			oldLine++
		}
		if o.Kind != Delete {
			newLine++
		}
	}
	for i := 0; i < len(ops); {
		if ops[i].Kind == Equal {
			i++
			continue
		}
		start := max(0, i-Context)
		end := i // exclusive end of the last change so far
		for j := i; j < len(ops); {
			if ops[j].Kind != Equal {
				j++
				end = j
				continue
			}
			run := j
			for run < len(ops) && ops[run].Kind == Equal {
				run++
			}
			if run == len(ops) || run-j > 2*Context {
				break
			}
			j = run
		}
		stop := min(len(ops), end+Context)
		h := Hunk{OldStart: at[start].old, NewStart: at[start].new, Ops: ops[start:stop]}
		for _, o := range h.Ops {
			if o.Kind != Insert {
				h.OldLines++
			}
			if o.Kind != Delete {
				h.NewLines++
			}
		}
		if h.OldLines == 0 {
			h.OldStart--
		}
		if h.NewLines == 0 {
			h.NewStart--
		}
		out = append(out, h)
		i = stop
	}
	return out
}

// Span formats a unified-diff range: "start,count", or "start" for one line.
func Span(start, count int) string {
	if count == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, count)
}

// WriteHunk prints one hunk of a unified diff.
func WriteHunk(u *strings.Builder, h Hunk) {
	fmt.Fprintf(u, "@@ -%s +%s @@\n", Span(h.OldStart, h.OldLines), Span(h.NewStart, h.NewLines))
	for _, o := range h.Ops {
		u.WriteByte(byte(o.Kind))
		u.WriteString(strings.TrimSuffix(o.Line, "\n"))
		u.WriteByte('\n')
		if !strings.HasSuffix(o.Line, "\n") {
			u.WriteString("\\ No newline at end of file\n")
		}
	}
}

// Unified returns the unified diff turning before into after, with the
// given file names on its --- and +++ lines ("" when the texts are equal).
func Unified(oldName, newName, before, after string) string {
	if before == after {
		return ""
	}
	var u strings.Builder
	fmt.Fprintf(&u, "--- %s\n+++ %s\n", oldName, newName)
	for _, h := range Hunks(Lines(Split(before), Split(after))) {
		WriteHunk(&u, h)
	}
	return u.String()
}
