package term

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/dshq/dsh/tool"
)

// diffLine is one line of a rendered diff. Kind is '+', '-', ' ' or '@'
// (a hunk separator); Num is the line number in the new file ('+', ' ') or
// the old one ('-'), 0 when unknown.
type diffLine struct {
	Kind byte
	Num  int
	Text string
}

// metaUnified returns the unified diff a result's Meta carries (the fs
// tools record one as "unified"), or "".
func metaUnified(meta json.RawMessage) string {
	if len(meta) == 0 {
		return ""
	}
	var m struct {
		Unified string `json:"unified"`
	}
	if json.Unmarshal(meta, &m) != nil {
		return ""
	}
	return sanitize(m.Unified)
}

// unifiedLines parses a unified diff, keeping line numbers from the hunk
// headers and dropping the file headers.
func unifiedLines(u string) []diffLine {
	var out []diffLine
	oldN, newN := 0, 0
	for _, l := range strings.Split(strings.TrimSuffix(u, "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "--- "), strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, `\ `):
		case strings.HasPrefix(l, "@@"):
			oldN, newN = hunkStarts(l)
			if len(out) > 0 {
				out = append(out, diffLine{Kind: '@', Text: "⋮"})
			}
		case l == "":
			out = append(out, diffLine{Kind: ' ', Num: newN})
			oldN++
			newN++
		default:
			switch l[0] {
			case '+':
				out = append(out, diffLine{Kind: '+', Num: newN, Text: l[1:]})
				newN++
			case '-':
				out = append(out, diffLine{Kind: '-', Num: oldN, Text: l[1:]})
				oldN++
			default:
				out = append(out, diffLine{Kind: ' ', Num: newN, Text: l[1:]})
				oldN++
				newN++
			}
		}
	}
	return out
}

// hunkStarts reads "@@ -a,b +c,d @@".
func hunkStarts(h string) (oldStart, newStart int) {
	f := strings.Fields(h)
	num := func(s string) int {
		s = strings.TrimLeft(s, "-+")
		if i := strings.IndexByte(s, ','); i >= 0 {
			s = s[:i]
		}
		n, _ := strconv.Atoi(s)
		return n
	}
	if len(f) >= 3 {
		oldStart, newStart = num(f[1]), num(f[2])
	}
	if oldStart == 0 {
		oldStart = 1
	}
	if newStart == 0 {
		newStart = 1
	}
	return
}

// fileDiffLines diffs one front-end FileDiff line by line: a new file is
// all additions; otherwise the longest common subsequence keeps context.
func fileDiffLines(d tool.FileDiff) []diffLine {
	newL := splitText(d.NewText)
	if d.OldText == nil {
		out := make([]diffLine, len(newL))
		for i, l := range newL {
			out[i] = diffLine{Kind: '+', Num: i + 1, Text: l}
		}
		return out
	}
	return lineDiff(splitText(*d.OldText), newL)
}

func splitText(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// lineDiff is a plain LCS diff, bounded: beyond a size where the table
// would be costly it shows every old line removed and every new one added.
func lineDiff(a, b []string) []diffLine {
	if len(a)*len(b) > 200_000 {
		var out []diffLine
		for _, l := range a {
			out = append(out, diffLine{Kind: '-', Text: l})
		}
		for _, l := range b {
			out = append(out, diffLine{Kind: '+', Text: l})
		}
		return out
	}
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []diffLine
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			out = append(out, diffLine{Kind: ' ', Text: a[i]})
			i++
			j++
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			out = append(out, diffLine{Kind: '-', Text: a[i]})
			i++
		default:
			out = append(out, diffLine{Kind: '+', Text: b[j]})
			j++
		}
	}
	return out
}

// renderDiff styles at most limit lines of a diff (the rest is counted in
// a last line); widths are left to the caller.
func renderDiff(lines []diffLine, limit int, st Styles) []string {
	numbered := false
	wnum := 1
	for _, l := range lines {
		if l.Num > 0 {
			numbered = true
			wnum = max(wnum, len(strconv.Itoa(l.Num)))
		}
	}
	var out []string
	for i, l := range lines {
		if i == limit && len(lines) > limit+1 {
			out = append(out, st.Dim(fmt.Sprintf("… %d more diff lines", len(lines)-limit)))
			break
		}
		num := ""
		if numbered {
			if l.Num > 0 && l.Kind != '@' {
				num = fmt.Sprintf("%*d ", wnum, l.Num)
			} else {
				num = strings.Repeat(" ", wnum+1)
			}
			num = st.Dim(num)
		}
		text := strings.ReplaceAll(l.Text, "\t", "    ")
		switch l.Kind {
		case '+':
			out = append(out, num+st.Add("+ "+text))
		case '-':
			out = append(out, num+st.Del("- "+text))
		case '@':
			out = append(out, num+st.Hunk(text))
		default:
			out = append(out, num+st.Dim("  ")+text)
		}
	}
	return out
}
