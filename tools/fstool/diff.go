package fstool

import (
	"fmt"
	"strings"

	"github.com/dshq/dsh/tool"
)

const (
	// diffContext is the number of unchanged lines shown around a change;
	// changes separated by at most twice as many unchanged lines share a hunk.
	diffContext = 3
	// maxEditDistance and diffWork bound the Myers search (time
	// O((N+M)·D), memory O(D²)): the distance searched is at most
	// maxEditDistance and at most diffWork/(N+M). Beyond it the changed
	// region is reported as one replacement: still a correct diff, just not
	// a minimal one, which is all a UI needs for a rewrite of that size.
	maxEditDistance = 1000
	diffWork        = 50_000_000
	// maxDiffBytes bounds the hunks recorded in a result's Meta (which is
	// stored in the session log); larger diffs are omitted and front-ends
	// fall back to the call's arguments.
	maxDiffBytes = 1 << 20
)

// opKind is one step of an edit script.
type opKind byte

const (
	opEqual  opKind = ' '
	opDelete opKind = '-'
	opInsert opKind = '+'
)

// diffOp is one line of an edit script; the line keeps its "\n" (if it has
// one), so "x" and "x\n" differ, as they do in a unified diff.
type diffOp struct {
	kind opKind
	line string
}

// hunk is one group of changes with its context.
type hunk struct {
	oldStart, oldLines int // 1-based start; start is the line before when oldLines is 0
	newStart, newLines int
	ops                []diffOp
}

// splitLines splits s after each "\n"; the last line may lack one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// diffLines returns an edit script turning a into b.
func diffLines(a, b []string) []diffOp {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ops := make([]diffOp, 0, len(a)+len(b)-pre-suf)
	for _, l := range a[:pre] {
		ops = append(ops, diffOp{opEqual, l})
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	if mid, ok := myers(ma, mb); ok {
		ops = append(ops, mid...)
	} else {
		for _, l := range ma {
			ops = append(ops, diffOp{opDelete, l})
		}
		for _, l := range mb {
			ops = append(ops, diffOp{opInsert, l})
		}
	}
	for _, l := range a[len(a)-suf:] {
		ops = append(ops, diffOp{opEqual, l})
	}
	return ops
}

// myers is Myers' O(ND) shortest edit script. It reports false when the
// edit distance exceeds maxEditDistance. Deletions come before insertions
// within a change, as in diff(1).
func myers(a, b []string) ([]diffOp, bool) {
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
	var rev []diffOp
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
			rev = append(rev, diffOp{opEqual, a[x-1]})
			x, y = x-1, y-1
		}
		if d > 0 {
			if x == px {
				rev = append(rev, diffOp{opInsert, b[y-1]})
			} else {
				rev = append(rev, diffOp{opDelete, a[x-1]})
			}
		}
		x, y = px, py
	}
	ops := make([]diffOp, len(rev))
	for i, o := range rev {
		ops[len(rev)-1-i] = o
	}
	return normalizeOrder(ops), true
}

// normalizeOrder moves insertions after the deletions of the same change, so
// a replaced block reads "-old… +new…".
func normalizeOrder(ops []diffOp) []diffOp {
	out := make([]diffOp, 0, len(ops))
	for i := 0; i < len(ops); {
		if ops[i].kind == opEqual {
			out = append(out, ops[i])
			i++
			continue
		}
		j := i
		for j < len(ops) && ops[j].kind != opEqual {
			j++
		}
		for _, o := range ops[i:j] {
			if o.kind == opDelete {
				out = append(out, o)
			}
		}
		for _, o := range ops[i:j] {
			if o.kind == opInsert {
				out = append(out, o)
			}
		}
		i = j
	}
	return out
}

// hunks groups an edit script into hunks with diffContext lines of context.
func hunks(ops []diffOp) []hunk {
	var out []hunk
	oldLine, newLine := 1, 1 // line numbers of ops[i] on each side
	type pos struct{ old, new int }
	at := make([]pos, len(ops))
	for i, o := range ops {
		at[i] = pos{oldLine, newLine}
		if o.kind != opInsert {
			oldLine++
		}
		if o.kind != opDelete {
			newLine++
		}
	}
	for i := 0; i < len(ops); {
		if ops[i].kind == opEqual {
			i++
			continue
		}
		start := max(0, i-diffContext)
		end := i // exclusive end of the last change so far
		for j := i; j < len(ops); {
			if ops[j].kind != opEqual {
				j++
				end = j
				continue
			}
			run := j
			for run < len(ops) && ops[run].kind == opEqual {
				run++
			}
			if run == len(ops) || run-j > 2*diffContext {
				break
			}
			j = run
		}
		stop := min(len(ops), end+diffContext)
		h := hunk{oldStart: at[start].old, newStart: at[start].new, ops: ops[start:stop]}
		for _, o := range h.ops {
			if o.kind != opInsert {
				h.oldLines++
			}
			if o.kind != opDelete {
				h.newLines++
			}
		}
		if h.oldLines == 0 {
			h.oldStart--
		}
		if h.newLines == 0 {
			h.newStart--
		}
		out = append(out, h)
		i = stop
	}
	return out
}

// fileDiffs returns the applied hunks of before→after as front-end diffs
// (one per hunk, old and new text with their context) and as a unified diff.
// path is the path the model gave, which is what UIs show. It returns
// nothing when the texts are equal or the diff exceeds maxDiffBytes.
func fileDiffs(path, before, after string) ([]tool.FileDiff, string) {
	if before == after {
		return nil, ""
	}
	hs := hunks(diffLines(splitLines(before), splitLines(after)))
	if len(hs) == 0 {
		return nil, ""
	}
	diffs := make([]tool.FileDiff, 0, len(hs))
	var u strings.Builder
	fmt.Fprintf(&u, "--- %s\n+++ %s\n", path, path)
	for _, h := range hs {
		var oldL, newL []string
		fmt.Fprintf(&u, "@@ -%s +%s @@\n", span(h.oldStart, h.oldLines), span(h.newStart, h.newLines))
		for _, o := range h.ops {
			text := strings.TrimSuffix(o.line, "\n")
			if o.kind != opInsert {
				oldL = append(oldL, text)
			}
			if o.kind != opDelete {
				newL = append(newL, text)
			}
			u.WriteByte(byte(o.kind))
			u.WriteString(text)
			u.WriteByte('\n')
			if !strings.HasSuffix(o.line, "\n") {
				u.WriteString("\\ No newline at end of file\n")
			}
		}
		d := tool.FileDiff{Path: path, NewText: strings.Join(newL, "\n")}
		if len(oldL) > 0 {
			s := strings.Join(oldL, "\n")
			d.OldText = &s
		}
		diffs = append(diffs, d)
		if u.Len() > maxDiffBytes {
			return nil, ""
		}
	}
	return diffs, u.String()
}

// span formats a unified-diff range: "start,count", or "start" for one line.
func span(start, count int) string {
	if count == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, count)
}
