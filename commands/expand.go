package commands

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/dshq/dsh/internal/atref"
)

// Runner does what a command body asks for on behalf of the agent that
// will take the prompt: both go through the tool pipeline, so permission
// rules (and the command's allowed tools), hooks and the sandbox apply.
type Runner interface {
	// Shell runs a command line; its output (and exit status) is inlined.
	// An error means it did not run (refused): the command stops.
	Shell(ctx context.Context, line string) (string, error)
	// Read returns a file's contents; found is false when there is no such
	// file (the @word stays as written). An error is a refusal.
	Read(ctx context.Context, path string) (text string, found bool, err error)
}

// bang is Claude Code's !`command`.
var bang = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("!`([^`\n]+)`") })

// placeholder is $ARGUMENTS or $1 … $9.
var placeholder = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$(ARGUMENTS|[1-9])\b`) })

// Expand builds the prompt a command sends for an argument line:
// arguments substituted first (so !`git log $1` sees them), then each
// !`cmd` run and replaced by its output, then each @file replaced by the
// file. A refused command or file stops the expansion with an error
// naming it.
func (c *Command) Expand(ctx context.Context, args string, r Runner) (string, error) {
	args = strings.TrimSpace(args)
	words := SplitArgs(args)
	body := c.Body
	used := false
	body = placeholder().ReplaceAllStringFunc(body, func(m string) string {
		used = true
		if m == "$ARGUMENTS" {
			return args
		}
		n, _ := strconv.Atoi(m[1:])
		if n <= len(words) {
			return words[n-1]
		}
		return ""
	})
	if !used && args != "" {
		body += "\n\nARGUMENTS: " + args
	}
	// One pass over the template: what a command prints or a file holds
	// is never read again for more !`…` or @references.
	type span struct {
		start, end int
		line, path string // a !`line`, or an @path
	}
	var spans []span
	for _, m := range bang().FindAllStringSubmatchIndex(body, -1) {
		spans = append(spans, span{start: m[0], end: m[1], line: strings.TrimSpace(body[m[2]:m[3]])})
	}
	inBang := func(i int) bool {
		for _, sp := range spans {
			if sp.line != "" && i >= sp.start && i < sp.end {
				return true
			}
		}
		return false
	}
	for _, ref := range atref.Find(body) {
		if !inBang(ref.Start) {
			spans = append(spans, span{start: ref.Start, end: ref.End, path: ref.Path})
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		b.WriteString(body[last:sp.start])
		last = sp.start
		if sp.line != "" {
			out, err := r.Shell(ctx, sp.line)
			if err != nil {
				return "", fmt.Errorf("/%s: !`%s` did not run: %w", c.Name, sp.line, err)
			}
			b.WriteString(strings.TrimRight(out, "\n"))
			last = sp.end
			continue
		}
		for _, p := range atref.Trim(sp.path) {
			text, found, err := r.Read(ctx, p)
			if err != nil {
				return "", fmt.Errorf("/%s: @%s was not read: %w", c.Name, p, err)
			}
			if !found {
				continue
			}
			fmt.Fprintf(&b, "@%s\n\n<file path=%q>\n%s\n</file>\n", p, p, strings.TrimRight(text, "\n"))
			last = sp.start + 1 + len(p)
			break
		}
	}
	b.WriteString(body[last:])
	return b.String(), nil
}

// SplitArgs splits an argument line into words as a shell would for plain
// and quoted words ("fix the bug" 'x y' z is three); backslash escapes the
// next character.
func SplitArgs(s string) []string {
	var out []string
	var cur strings.Builder
	in, quote, esc := false, byte(0), false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case esc:
			cur.WriteByte(ch)
			esc, in = false, true
		case ch == '\\' && quote != '\'':
			esc = true
		case quote != 0:
			if ch == quote {
				quote = 0
			} else {
				cur.WriteByte(ch)
			}
		case ch == '"' || ch == '\'':
			quote, in = ch, true
		case ch == ' ' || ch == '\t' || ch == '\n':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(ch)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}
