package term

import (
	"strings"

	"charm.land/glamour/v2"
	"charm.land/glamour/v2/styles"
)

// markdown renders finished assistant text with glamour. A renderer is
// built per width and reused; rendering failures fall back to the raw text.
type markdown struct {
	style string
	width int
	r     *glamour.TermRenderer
}

func newMarkdown(plain bool, env func(string) string) *markdown {
	style := styles.DarkStyle
	if s := env("GLAMOUR_STYLE"); s != "" {
		style = s
	}
	if plain {
		style = styles.NoTTYStyle
	}
	return &markdown{style: style}
}

// Render returns text as terminal rows (no trailing newline).
func (m *markdown) Render(text string, width int) string {
	if strings.TrimSpace(text) == "" {
		return ""
	}
	if width < 20 {
		width = 20
	}
	if m.r == nil || m.width != width {
		r, err := glamour.NewTermRenderer(glamour.WithStylePath(m.style), glamour.WithWordWrap(width-2), glamour.WithPreservedNewLines())
		if err != nil {
			r, err = glamour.NewTermRenderer(glamour.WithStandardStyle(styles.DarkStyle), glamour.WithWordWrap(width-2), glamour.WithPreservedNewLines())
		}
		if err != nil {
			return text
		}
		m.r, m.width = r, width
	}
	out, err := m.r.Render(text)
	if err != nil {
		return text
	}
	return trimBlankLines(out)
}

// trimBlankLines drops leading and trailing lines that hold only spaces
// (and styling), keeping the indentation of the first real line.
func trimBlankLines(s string) string {
	lines := strings.Split(s, "\n")
	blank := func(l string) bool { return strings.TrimSpace(stripANSI(l)) == "" }
	for len(lines) > 0 && blank(lines[0]) {
		lines = lines[1:]
	}
	for len(lines) > 0 && blank(lines[len(lines)-1]) {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		lines[i] = trimStyledRight(l)
	}
	return strings.Join(lines, "\n")
}

// trimStyledRight drops the padding glamour adds at the end of a row: spaces
// each wrapped in their own styling. One reset replaces the styling removed.
func trimStyledRight(l string) string {
	styled := false
	for {
		if i := sgrSuffixStart(l); i >= 0 {
			l, styled = l[:i], true
			continue
		}
		if t := strings.TrimRight(l, " "); t != l {
			l = t
			continue
		}
		break
	}
	if styled {
		l += "\x1b[m"
	}
	return l
}

// sgrSuffixStart returns where a styling sequence (ESC [ digits/; m) that
// ends l starts, or -1.
func sgrSuffixStart(l string) int {
	if !strings.HasSuffix(l, "m") {
		return -1
	}
	i := len(l) - 2
	for i >= 0 && (l[i] == ';' || (l[i] >= '0' && l[i] <= '9')) {
		i--
	}
	if i >= 1 && l[i] == '[' && l[i-1] == 0x1b {
		return i - 1
	}
	return -1
}
