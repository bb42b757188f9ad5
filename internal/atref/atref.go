// Package atref finds @path references in Markdown the way Claude Code
// reads them in CLAUDE.md imports and command bodies: a word starting with
// @ at the start of a line or after white space, outside fenced code
// blocks and inline code spans (where "@" is code, not a reference).
package atref

import "strings"

// Ref is one reference: the path after the @, and the byte range of the
// whole "@path" in the text.
type Ref struct {
	Path       string
	Start, End int
}

// Find returns the references of text, in order.
func Find(text string) []Ref {
	var out []Ref
	fence := ""
	off := 0
	for line := range strings.SplitSeq(text, "\n") {
		start := off
		off += len(line) + 1
		trimmed := strings.TrimLeft(line, " \t")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		if strings.IndexByte(line, '@') < 0 {
			continue
		}
		for _, r := range inLine(line) {
			r.Start += start
			r.End += start
			out = append(out, r)
		}
	}
	return out
}

// inLine finds the references of one line outside code spans.
func inLine(line string) []Ref {
	var out []Ref
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == '`':
			// A code span runs to the next run of as many backticks.
			n := 1
			for i+n < len(line) && line[i+n] == '`' {
				n++
			}
			end := strings.Index(line[i+n:], strings.Repeat("`", n))
			if end < 0 {
				return out
			}
			i += n + end + n - 1
		case c == '@' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t' || line[i-1] == '('):
			j := i + 1
			for j < len(line) && line[j] != ' ' && line[j] != '\t' {
				j++
			}
			if j > i+1 {
				out = append(out, Ref{Path: line[i+1 : j], Start: i, End: j})
			}
			i = j - 1
		}
	}
	return out
}

// Trim returns the forms of a reference worth trying as a path: as
// written, then without trailing punctuation ("@docs/style.md." in a
// sentence).
func Trim(path string) []string {
	t := strings.TrimRight(path, ".,;:!?)]}\"'")
	if t == path || t == "" {
		return []string{path}
	}
	return []string{path, t}
}
