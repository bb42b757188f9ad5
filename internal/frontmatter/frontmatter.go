// Package frontmatter splits a Markdown file written for Claude Code or
// Codex (a command, a skill, an agent) into its YAML front matter and its
// body.
//
// Such files are read at every start, by the hundred in a large setup, so
// the common shape — flat "key: value" lines, quoted or not, inline
// [a, b] lists and "- item" lists — is read by a small scanner of its own;
// anything else (block scalars, nested maps, anchors) goes to a real YAML
// decoder, so a description written as a folded ">" block reads as Claude
// Code reads it.
package frontmatter

import (
	"errors"
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Doc is a parsed file: the front matter's top-level keys and the body.
type Doc struct {
	// Fields holds each top-level key's value: a string, a []string, or
	// (from the YAML decoder) whatever YAML made of it.
	Fields map[string]any
	// Body is the text after the front matter (the whole text without one).
	Body string
	// Has reports that the file had front matter.
	Has bool
	// raw holds each flat key's text as written (for values such as an
	// argument hint, "[message]", that YAML would read as a list).
	raw map[string]string
}

// Parse splits text. Windows line ends and a byte order mark are
// tolerated. Front matter that is opened but not closed, or that is not
// YAML, is an error naming the problem.
func Parse(text string) (Doc, error) {
	text = strings.TrimPrefix(text, "\ufeff")
	if strings.Contains(text, "\r\n") {
		text = strings.ReplaceAll(text, "\r\n", "\n")
	}
	first, rest, _ := strings.Cut(text, "\n")
	if strings.TrimRight(first, " \t") != "---" {
		return Doc{Body: text}, nil
	}
	end, body := -1, ""
	for i := 0; i <= len(rest); {
		j := strings.IndexByte(rest[i:], '\n')
		line := rest[i:]
		next := len(rest) + 1
		if j >= 0 {
			line, next = rest[i:i+j], i+j+1
		}
		if strings.TrimRight(line, " \t") == "---" {
			end = i
			if next <= len(rest) {
				body = rest[next:]
			}
			break
		}
		i = next
	}
	if end < 0 {
		return Doc{}, errors.New("front matter is not closed with ---")
	}
	head := rest[:end]
	fields, raw, ok := scan(head)
	if !ok {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(head), &m); err != nil {
			return Doc{}, fmt.Errorf("front matter is not valid YAML: %v", yamlMessage(err))
		}
		fields = m
	}
	if fields == nil {
		fields = map[string]any{}
	}
	return Doc{Fields: fields, Body: body, Has: true, raw: raw}, nil
}

// Text returns a key's value as written on its line when the file is
// flat ("[message]" stays "[message]"), else [Doc.String].
func (d Doc) Text(key string) string {
	if s, ok := d.raw[key]; ok {
		return s
	}
	if _, ok := d.Fields[key].([]any); ok {
		return "[" + d.String(key) + "]"
	}
	return d.String(key)
}

func yamlMessage(err error) string {
	return strings.TrimPrefix(err.Error(), "yaml: ")
}

// String returns a key's value as text: a string as is, a list joined with
// ", ", other scalars formatted; "" when absent.
func (d Doc) String(key string) string {
	switch v := d.Fields[key].(type) {
	case nil:
		return ""
	case string:
		return v
	case []string:
		return strings.Join(v, ", ")
	case []any:
		parts := make([]string, 0, len(v))
		for _, x := range v {
			parts = append(parts, fmt.Sprint(x))
		}
		return strings.Join(parts, ", ")
	default:
		return fmt.Sprint(v)
	}
}

// List returns a key's value as a list: a YAML list, or a string split on
// commas outside parentheses (Claude Code's "allowed-tools: Read,
// Bash(git add:*)"). Present reports whether the key is set at all.
func (d Doc) List(key string) (items []string, present bool) {
	v, present := d.Fields[key]
	switch v := v.(type) {
	case nil:
	case []string:
		items = v
	case []any:
		for _, x := range v {
			items = append(items, SplitList(fmt.Sprint(x))...)
		}
	default:
		items = SplitList(fmt.Sprint(v))
	}
	return items, present
}

// Bool returns a key's value as a boolean (true, "true", "yes").
func (d Doc) Bool(key string) bool {
	switch v := d.Fields[key].(type) {
	case bool:
		return v
	case string:
		s := strings.ToLower(strings.TrimSpace(v))
		return s == "true" || s == "yes" || s == "on"
	}
	return false
}

// SplitList splits a comma-separated list outside parentheses, trimming
// quotes and spaces: "Read, Bash(git add:*, git status:*)" is two items.
func SplitList(s string) []string {
	var out []string
	depth, start := 0, 0
	add := func(p string) {
		if p = strings.Trim(strings.TrimSpace(p), `"'`); p != "" {
			out = append(out, p)
		}
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			if depth > 0 {
				depth--
			}
		case ',':
			if depth == 0 {
				add(s[start:i])
				start = i + 1
			}
		}
	}
	add(s[start:])
	return out
}

// scan reads the flat shape: "key: value", "key: [a, b]", and "key:"
// followed by "- item" lines. ok is false for anything else (the YAML
// decoder then reads it).
func scan(head string) (map[string]any, map[string]string, bool) {
	out, raw := map[string]any{}, map[string]string{}
	var listKey string
	for line := range strings.SplitSeq(head, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || trimmed[0] == '#' {
			continue
		}
		indented := line[0] == ' ' || line[0] == '\t'
		if listKey != "" && (indented || trimmed[0] == '-') {
			item, ok := strings.CutPrefix(trimmed, "-")
			if !ok {
				return nil, nil, false
			}
			v, ok := scalar(strings.TrimSpace(item))
			if !ok {
				return nil, nil, false
			}
			l, _ := out[listKey].([]string)
			out[listKey] = append(l, v)
			continue
		}
		listKey = ""
		if indented {
			return nil, nil, false
		}
		k, v, found := strings.Cut(line, ":")
		k = strings.TrimSpace(k)
		if !found || k == "" || strings.ContainsAny(k, " \t\"'{}[]&*!|>%@`") {
			return nil, nil, false
		}
		v = strings.TrimSpace(v)
		raw[k] = v
		switch {
		case v == "":
			listKey = k
			out[k] = nil
		case v[0] == '[':
			if !strings.HasSuffix(v, "]") || strings.ContainsAny(v[1:len(v)-1], "[]{}") {
				return nil, nil, false
			}
			out[k] = SplitList(v[1 : len(v)-1])
		default:
			s, ok := scalar(v)
			if !ok {
				return nil, nil, false
			}
			out[k], raw[k] = s, s
		}
	}
	for k, v := range out {
		if v == nil {
			delete(out, k) // "key:" with nothing under it: YAML's null
		}
	}
	return out, raw, true
}

// scalar reads a plain or quoted one-line scalar; ok is false for what
// needs YAML (block scalars, flow maps, anchors, tags, an escape).
func scalar(v string) (string, bool) {
	if v == "" {
		return "", true
	}
	switch v[0] {
	case '"':
		if len(v) < 2 || !strings.HasSuffix(v, `"`) || strings.ContainsAny(v[1:len(v)-1], `"\`) {
			return "", false
		}
		return v[1 : len(v)-1], true
	case '\'':
		if len(v) < 2 || !strings.HasSuffix(v, "'") || strings.Contains(v[1:len(v)-1], "'") {
			return "", false
		}
		return v[1 : len(v)-1], true
	case '|', '>', '{', '&', '*', '!', '%', '@', '`', '[':
		return "", false
	}
	if i := strings.Index(v, " #"); i >= 0 {
		v = strings.TrimSpace(v[:i])
	}
	// A plain scalar with ": " inside is an error to strict YAML; Claude
	// Code users write descriptions like that, so it is read as text.
	return v, true
}
