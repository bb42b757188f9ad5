package term

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"
	gast "github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// markdown renders finished assistant text for the terminal: headings,
// emphasis, inline code, links, lists (task lists too), quotes, rules,
// tables and fenced code, word-wrapped to the width.
//
// It walks goldmark's syntax tree itself rather than using glamour:
// glamour links chroma and bluemonday, whose package initialisation alone
// cost about 45 ms at every dsh start (measured with GODEBUG=inittrace=1),
// more than the whole start-up budget.
//
// Code blocks are coloured by [highlighter] (see highlight.go for why not
// chroma), diff blocks line by line.
type markdown struct {
	st    Styles
	plain bool
	md    parser.Parser
	// pal is built on the first code block.
	pal *codePalette
}

func newMarkdown(plain bool, _ func(string) string) *markdown {
	return &markdown{st: NewStyles(plain), plain: plain, md: newParser()}
}

func (m *markdown) palette() *codePalette {
	if m.pal == nil {
		p := newCodePalette(m.plain)
		m.pal = &p
	}
	return m.pal
}

// Render returns text as terminal rows (no trailing newline).
func (m *markdown) Render(src string, width int) string {
	if strings.TrimSpace(src) == "" {
		return ""
	}
	if width < 20 {
		width = 20
	}
	b := []byte(src)
	doc, ok := m.parse(b)
	r := &mdRender{m: m, src: b, width: width - 2}
	if !ok {
		// goldmark panicked: show the text as written, wrapped.
		for _, line := range strings.Split(src, "\n") {
			r.wrap(line, "  ", "  ")
		}
	} else {
		r.blocks(doc, "  ")
	}
	return strings.TrimRight(strings.Join(r.lines, "\n"), "\n ")
}

// parse runs goldmark, reporting a panic as !ok: goldmark v1.8.2's
// fenced-code parser indexes out of range on "> \t~" (found by
// TestGFMMatchesGoldmarkExtensionRandom), and text a model wrote must
// not take the terminal down.
func (m *markdown) parse(b []byte) (doc gast.Node, ok bool) {
	defer func() {
		if recover() != nil {
			doc, ok = nil, false
		}
	}()
	return m.md.Parse(text.NewReader(b)), true
}

type mdRender struct {
	m     *markdown
	src   []byte
	width int
	lines []string
}

func (r *mdRender) blank() {
	if n := len(r.lines); n > 0 && r.lines[n-1] != "" {
		r.lines = append(r.lines, "")
	}
}

// wrap appends s word-wrapped to the width, each row prefixed.
func (r *mdRender) wrap(s, first, rest string) {
	w := r.width - ansi.StringWidth(first)
	if w < 10 {
		w = 10
	}
	for i, row := range strings.Split(ansi.Wordwrap(s, w, " -"), "\n") {
		p := rest
		if i == 0 {
			p = first
		}
		r.lines = append(r.lines, p+row)
	}
}

func (r *mdRender) blocks(n gast.Node, prefix string) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		r.block(c, prefix)
	}
}

func (r *mdRender) block(n gast.Node, prefix string) {
	st := r.m.st
	switch n := n.(type) {
	case *gast.Heading:
		r.blank()
		t := r.inline(n)
		switch {
		case st.Plain:
			// No styles to tell a heading from a paragraph: keep its marks.
			t = strings.Repeat("#", n.Level) + " " + t
		case n.Level == 1:
			t = st.H1(t)
		case n.Level == 2:
			t = st.H2(t)
		default:
			t = st.Bold(t)
		}
		r.wrap(t, prefix, prefix)
		r.lines = append(r.lines, "")
	case *gast.Paragraph, *gast.TextBlock:
		r.wrap(r.inline(n), prefix, prefix)
		if _, ok := n.(*gast.Paragraph); ok {
			r.lines = append(r.lines, "")
		}
	case *gast.FencedCodeBlock, *gast.CodeBlock:
		r.blank()
		info := ""
		if fc, ok := n.(*gast.FencedCodeBlock); ok && fc.Info != nil {
			info = string(fc.Info.Segment.Value(r.src))
			if lang := string(fc.Language(r.src)); lang != "" {
				r.lines = append(r.lines, prefix+st.Dim("  "+lang))
			}
		}
		diff := isDiffLang(info)
		h := &highlighter{pal: r.m.palette()}
		if !diff {
			h.l = lookupLang(info)
		}
		ls := n.Lines()
		for i := 0; i < ls.Len(); i++ {
			seg := ls.At(i)
			line := strings.ReplaceAll(strings.TrimRight(string(seg.Value(r.src)), "\r\n"), "\t", "    ")
			switch {
			case diff:
				line = diffLineStyle(line, st)
			case h.l != nil:
				line = h.line(line)
			}
			r.lines = append(r.lines, prefix+"  "+line)
		}
		r.lines = append(r.lines, "")
	case *gast.List:
		num := n.Start
		for it := n.FirstChild(); it != nil; it = it.NextSibling() {
			bullet := "• "
			if n.IsOrdered() {
				bullet = fmt.Sprintf("%d. ", num)
				num++
			}
			r.item(it, prefix, bullet)
		}
		if n.IsTight {
			r.lines = append(r.lines, "")
		}
	case *gast.Blockquote:
		r.blocks(n, prefix+st.Dim("│ "))
	case *gast.ThematicBreak:
		r.lines = append(r.lines, prefix+st.Dim(strings.Repeat("─", min(r.width, 40))), "")
	case *gast.HTMLBlock:
		ls := n.Lines()
		for i := 0; i < ls.Len(); i++ {
			seg := ls.At(i)
			r.lines = append(r.lines, prefix+strings.TrimRight(string(seg.Value(r.src)), "\n"))
		}
	case *east.Table:
		r.table(n, prefix)
	default:
		r.blocks(n, prefix)
	}
}

func (r *mdRender) item(it gast.Node, prefix, bullet string) {
	pad := strings.Repeat(" ", ansi.StringWidth(bullet))
	first := true
	for c := it.FirstChild(); c != nil; c = c.NextSibling() {
		switch c.(type) {
		case *gast.Paragraph, *gast.TextBlock:
			p := prefix + pad
			if first {
				p = prefix + r.m.st.Dim(bullet)
			}
			r.wrap(r.inline(c), p, prefix+pad)
			first = false
		default:
			if first {
				r.lines = append(r.lines, prefix+r.m.st.Dim(bullet))
				first = false
			}
			r.block(c, prefix+pad)
			if n := len(r.lines); n > 0 && r.lines[n-1] == "" {
				r.lines = r.lines[:n-1]
			}
		}
	}
}

func (r *mdRender) table(t *east.Table, prefix string) {
	var rows [][]string
	for row := t.FirstChild(); row != nil; row = row.NextSibling() {
		var cells []string
		for c := row.FirstChild(); c != nil; c = c.NextSibling() {
			cells = append(cells, r.inline(c))
		}
		rows = append(rows, cells)
	}
	widths := map[int]int{}
	for _, row := range rows {
		for i, c := range row {
			widths[i] = max(widths[i], ansi.StringWidth(c))
		}
	}
	align := func(i int) east.Alignment {
		if i < len(t.Alignments) {
			return t.Alignments[i]
		}
		return east.AlignNone
	}
	r.blank()
	for k, row := range rows {
		var b strings.Builder
		for i, c := range row {
			if i > 0 {
				b.WriteString(r.m.st.Dim(" │ "))
			}
			if k == 0 {
				c = r.m.st.Bold(c)
			}
			pad := widths[i] - ansi.StringWidth(c)
			switch align(i) {
			case east.AlignRight:
				b.WriteString(strings.Repeat(" ", pad) + c)
			case east.AlignCenter:
				b.WriteString(strings.Repeat(" ", pad/2) + c + strings.Repeat(" ", pad-pad/2))
			default:
				b.WriteString(c + strings.Repeat(" ", pad))
			}
		}
		r.lines = append(r.lines, prefix+strings.TrimRight(b.String(), " "))
		if k == 0 && len(rows) > 1 {
			// The rule under the header row.
			var sep strings.Builder
			for i := range row {
				if i > 0 {
					sep.WriteString("─┼─")
				}
				sep.WriteString(strings.Repeat("─", widths[i]))
			}
			r.lines = append(r.lines, prefix+r.m.st.Dim(sep.String()))
		}
	}
	r.lines = append(r.lines, "")
}

// inline renders the inline children of n as one styled string.
func (r *mdRender) inline(n gast.Node) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		r.inlineNode(&b, c)
	}
	return b.String()
}

func (r *mdRender) inlineNode(b *strings.Builder, n gast.Node) {
	st := r.m.st
	switch n := n.(type) {
	case *gast.Text:
		b.Write(n.Segment.Value(r.src))
		if n.HardLineBreak() || n.SoftLineBreak() {
			b.WriteByte(' ')
		}
	case *gast.String:
		b.Write(n.Value)
	case *gast.CodeSpan:
		var t bytes.Buffer
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			if tx, ok := c.(*gast.Text); ok {
				t.Write(tx.Segment.Value(r.src))
			}
		}
		if st.Plain {
			b.WriteString("`" + t.String() + "`")
		} else {
			b.WriteString(st.Code(t.String()))
		}
	case *gast.Emphasis:
		inner := r.inline(n)
		if n.Level >= 2 {
			b.WriteString(st.Bold(inner))
		} else {
			b.WriteString(st.Italic(inner))
		}
	case *gast.Link:
		label := r.inline(n)
		dest := string(n.Destination)
		b.WriteString(label)
		if dest != "" && dest != label {
			b.WriteString(st.Dim(" (" + dest + ")"))
		}
	case *gast.AutoLink:
		b.WriteString(string(n.URL(r.src)))
	case *gast.Image:
		b.WriteString(st.Dim("[image: " + r.inline(n) + "]"))
	case *gast.RawHTML:
		for i := 0; i < n.Segments.Len(); i++ {
			seg := n.Segments.At(i)
			b.Write(seg.Value(r.src))
		}
	case *east.Strikethrough:
		b.WriteString(st.Dim(r.inline(n)))
	case *east.TaskCheckBox:
		if n.IsChecked {
			b.WriteString("[x] ")
		} else {
			b.WriteString("[ ] ")
		}
	default:
		b.WriteString(r.inline(n))
	}
}
