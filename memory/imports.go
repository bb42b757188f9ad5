package memory

import "strings"

// imports returns the @references of a memory file's text, in order: a
// word starting with @ at the start of a line or after white space,
// outside fenced code blocks and inline code spans (where "@" is code, not
// an import, as Claude Code reads it).
func imports(text string) []string {
	var out []string
	fence := ""
	for line := range strings.SplitSeq(text, "\n") {
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
		if !strings.Contains(line, "@") {
			continue
		}
		out = append(out, lineImports(line)...)
	}
	return out
}

// lineImports finds the references of one line outside code spans.
func lineImports(line string) []string {
	var out []string
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
		case c == '@' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			j := i + 1
			for j < len(line) && line[j] != ' ' && line[j] != '\t' {
				j++
			}
			if ref := line[i+1 : j]; ref != "" {
				out = append(out, ref)
			}
			i = j - 1
		}
	}
	return out
}
