package docgen

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// fenceMarker reports whether line opens or closes a fenced code block and
// returns its marker (the run of backticks or tildes).
func fenceMarker(line string) (string, bool) {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 || len(t) < 3 {
		return "", false
	}
	c := t[0]
	if c != '`' && c != '~' {
		return "", false
	}
	n := 0
	for n < len(t) && t[n] == c {
		n++
	}
	if n < 3 {
		return "", false
	}
	return t[:n], true
}

// proseLines calls fn for every line outside fenced code blocks, with its
// 1-based number.
func proseLines(b []byte, fn func(n int, line string)) {
	var fence string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if f, ok := fenceMarker(line); ok {
			switch {
			case fence == "":
				fence = f
				continue
			case f[0] == fence[0] && len(f) >= len(fence) && strings.TrimSpace(strings.TrimLeft(line, " ")[len(f):]) == "":
				fence = ""
				continue
			}
		}
		if fence == "" {
			fn(n, line)
		}
	}
}

// heading parses an ATX heading line.
func heading(line string) (int, string) {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 {
		return 0, ""
	}
	n := 0
	for n < len(t) && t[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || (n < len(t) && t[n] != ' ' && t[n] != '\t') {
		return 0, ""
	}
	text := strings.TrimSpace(t[n:])
	text = strings.TrimSpace(strings.TrimRight(text, "#"))
	return n, text
}

// Heading is one heading of a Markdown file with its GitHub anchor.
type Heading struct {
	Level  int
	Text   string
	Anchor string
}

var (
	inlineLink = regexp.MustCompile(`!?\[([^\]]*)\]\(([^)\s]*)(?:\s+"[^"]*")?\)`)
	refDef     = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*(\S+)`)
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	htmlAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
)

// Headings lists the headings outside code fences, with anchors computed
// the way GitHub does (duplicates get -1, -2, … suffixes).
func Headings(b []byte) []Heading {
	var out []Heading
	used := map[string]int{}
	proseLines(b, func(_ int, line string) {
		level, text := heading(line)
		if level == 0 {
			return
		}
		base := slug(text)
		a := base
		if k := used[base]; k > 0 {
			a = fmt.Sprintf("%s-%d", base, k)
		}
		used[base]++
		out = append(out, Heading{Level: level, Text: text, Anchor: a})
	})
	return out
}

// slug turns heading text into its anchor: inline links keep their text,
// then everything but letters, digits, spaces, hyphens and underscores is
// dropped, letters are lowered and spaces become hyphens.
func slug(text string) string {
	text = inlineLink.ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Link is one link target found in prose.
type Link struct {
	Line   int
	Target string
}

// Links lists the inline and reference-definition link targets of a
// Markdown file, ignoring code blocks and code spans.
func Links(b []byte) []Link {
	var out []Link
	proseLines(b, func(n int, line string) {
		line = codeSpan.ReplaceAllStringFunc(line, func(s string) string { return strings.Repeat("x", len(s)) })
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			out = append(out, Link{Line: n, Target: m[2]})
		}
		if m := refDef.FindStringSubmatch(line); m != nil {
			out = append(out, Link{Line: n, Target: strings.Trim(m[1], "<>")})
		}
	})
	return out
}

var scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// CheckLinks checks every relative link of the given Markdown files (paths
// relative to root): the target must exist inside the repository, and a
// #fragment pointing into a Markdown file must name one of its headings.
// Links with a scheme (https:, mailto:) are not followed.
func CheckLinks(root string, files []string) ([]Problem, error) {
	var probs []Problem
	anchors := map[string]map[string]bool{}
	anchorsOf := func(abs string) (map[string]bool, error) {
		if a, ok := anchors[abs]; ok {
			return a, nil
		}
		b, err := os.ReadFile(abs)
		if err != nil {
			return nil, err
		}
		a := map[string]bool{}
		for _, h := range Headings(b) {
			a[h.Anchor] = true
		}
		for _, m := range htmlAnchor.FindAllSubmatch(b, -1) {
			a[string(m[1])] = true
		}
		anchors[abs] = a
		return a, nil
	}
	for _, rel := range files {
		abs := filepath.Join(root, filepath.FromSlash(rel))
		b, err := os.ReadFile(abs)
		if err != nil {
			return nil, err
		}
		for _, l := range Links(b) {
			t := l.Target
			if t == "" || scheme.MatchString(t) || strings.HasPrefix(t, "//") {
				continue
			}
			where := fmt.Sprintf("%s:%d", rel, l.Line)
			p, frag, _ := strings.Cut(t, "#")
			p, _, _ = strings.Cut(p, "?")
			p, err := url.PathUnescape(p)
			if err != nil {
				probs = append(probs, Problem{where, "bad escape in link " + t})
				continue
			}
			target := abs
			if p != "" {
				if strings.HasPrefix(p, "/") {
					probs = append(probs, Problem{where, "link " + t + " is absolute; use a path relative to the file"})
					continue
				}
				target = filepath.Join(filepath.Dir(abs), filepath.FromSlash(p))
				if r, err := filepath.Rel(root, target); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
					probs = append(probs, Problem{where, "link " + t + " leaves the repository"})
					continue
				}
				if _, err := os.Stat(target); err != nil {
					probs = append(probs, Problem{where, "link " + t + " points to a missing file"})
					continue
				}
			}
			if frag == "" || !strings.EqualFold(filepath.Ext(target), ".md") {
				continue
			}
			a, err := anchorsOf(target)
			if err != nil {
				return nil, err
			}
			if !a[frag] {
				probs = append(probs, Problem{where, "link " + t + " names no heading of " + filepath.Base(target)})
			}
		}
	}
	return probs, nil
}

// MarkdownFiles lists, relative to root and with forward slashes, the
// Markdown files whose links are checked: every .md under docs/ and
// examples/, and README.md at the root when there is one.
func MarkdownFiles(root string) ([]string, error) {
	var out []string
	if _, err := os.Stat(filepath.Join(root, "README.md")); err == nil {
		out = append(out, "README.md")
	}
	for _, dir := range []string{"docs", "examples"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) && p == filepath.Join(root, dir) {
					return fs.SkipDir
				}
				return err
			}
			if !d.IsDir() && strings.EqualFold(filepath.Ext(p), ".md") {
				rel, err := filepath.Rel(root, p)
				if err != nil {
					return err
				}
				out = append(out, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
