package term

import (
	gast "github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// gfm adds the three GitHub extensions the terminal renders — tables,
// strikethrough and task-list boxes — to goldmark's CommonMark parser,
// building the node types of goldmark's extension/ast package.
//
// It stands in for goldmark/extension, whose package initialisation
// compiles linkify's URL regexps (with {1,256} repeats) and a dozen
// more at every dsh start: 2–4 ms and 260 KB of the start-up budget
// (GODEBUG=inittrace=1; docs/rfc/implemented/architecture/2026-12-03-own-gfm-extensions.md). The
// parsers here compile nothing; their output is checked against
// goldmark/extension's in gfm_test.go. Linkify is left out: a bare URL
// stays text, shown as the model wrote it.
//
// newParser builds goldmark's CommonMark parser (what goldmark.New would
// hold) with these added. The terminal uses only the parser: importing
// goldmark's root package would link its HTML renderer and that
// package's initialisation into every dsh start (issue 25).
func newParser() parser.Parser {
	p := parser.NewParser(parser.WithBlockParsers(parser.DefaultBlockParsers()...),
		parser.WithInlineParsers(parser.DefaultInlineParsers()...),
		parser.WithParagraphTransformers(parser.DefaultParagraphTransformers()...))
	p.AddOptions(
		parser.WithParagraphTransformers(util.Prioritized(tableTransformer{}, 200)),
		parser.WithASTTransformers(util.Prioritized(tablePipes{}, 0)),
		// Ahead of the link parser, which also starts at '['.
		parser.WithInlineParsers(
			util.Prioritized(taskBoxParser{}, 0),
			util.Prioritized(strikeParser{}, 500),
		),
	)
	return p
}

// reSpace is what \s matches in Go regexps (goldmark's table delimiter
// patterns): no vertical tab.
func reSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\f' || b == '\r'
}

// tableTransformer turns a paragraph whose lines hold a header row and
// a delimiter row (|:--|--:|) into an east.Table: the lines before the
// header stay a paragraph, every line after the delimiter is a row.
type tableTransformer struct{}

func (tableTransformer) Transform(p *gast.Paragraph, reader text.Reader, _ parser.Context) {
	lines := p.Lines()
	src := reader.Source()
	for i := 1; i < lines.Len(); i++ {
		delim := lines.At(i)
		aligns := tableDelimiter(delim.Value(src))
		if aligns == nil {
			continue
		}
		header := tableRow(lines.At(i-1), aligns, true, src)
		if header.ChildCount() != len(aligns) {
			return
		}
		t := east.NewTable()
		t.Alignments = aligns
		t.SetPos(p.Pos())
		t.AppendChild(t, east.NewTableHeader(header))
		for j := i + 1; j < lines.Len(); j++ {
			t.AppendChild(t, tableRow(lines.At(j), aligns, false, src))
		}
		p.Lines().SetSliced(0, i-1)
		parent := p.Parent()
		parent.InsertAfter(parent, p, t)
		if p.Lines().Len() == 0 {
			parent.RemoveChild(parent, p)
		} else {
			// The paragraph's last line loses its newline, as it would
			// at the paragraph's end.
			last := p.Lines().At(i - 2)
			last.Stop--
			p.Lines().Set(i-2, last)
		}
		return
	}
}

// tableDelimiter returns the alignments a delimiter row sets, or nil
// when line is not one.
func tableDelimiter(line []byte) []east.Alignment {
	if w, _ := util.IndentWidth(line, 0); w > 3 {
		return nil
	}
	dashesOnly := true
	for _, b := range line {
		if b != '-' {
			dashesOnly = false
		}
		if !util.IsSpace(b) && b != '-' && b != '|' && b != ':' {
			return nil
		}
	}
	if dashesOnly {
		return nil
	}
	var cols [][]byte
	start := 0
	for k := 0; k <= len(line); k++ {
		if k == len(line) || line[k] == '|' {
			cols = append(cols, line[start:k])
			start = k + 1
		}
	}
	if util.IsBlank(cols[0]) {
		cols = cols[1:]
	}
	if n := len(cols); n > 0 && util.IsBlank(cols[n-1]) {
		cols = cols[:n-1]
	}
	var aligns []east.Alignment
	for _, c := range cols {
		a, ok := delimiterCell(c)
		if !ok {
			return nil
		}
		aligns = append(aligns, a)
	}
	return aligns
}

// delimiterCell reads one cell of a delimiter row: dashes with an
// optional colon at either end, spaces around.
func delimiterCell(c []byte) (east.Alignment, bool) {
	i, j := 0, len(c)
	for i < j && reSpace(c[i]) {
		i++
	}
	for j > i && reSpace(c[j-1]) {
		j--
	}
	c = c[i:j]
	left := len(c) > 0 && c[0] == ':'
	if left {
		c = c[1:]
	}
	right := len(c) > 0 && c[len(c)-1] == ':'
	if right {
		c = c[:len(c)-1]
	}
	if len(c) == 0 {
		return east.AlignNone, false
	}
	for _, b := range c {
		if b != '-' {
			return east.AlignNone, false
		}
	}
	switch {
	case left && right:
		return east.AlignCenter, true
	case left:
		return east.AlignLeft, true
	case right:
		return east.AlignRight, true
	}
	return east.AlignNone, true
}

// tableRow splits a row line at its unescaped pipes into cells whose
// lines are left for the inline parser. A body row keeps as many cells
// as there are columns, filling missing ones with empty cells; the
// header keeps all it has (the caller rejects a mismatch).
func tableRow(seg text.Segment, aligns []east.Alignment, header bool, src []byte) *east.TableRow {
	start := seg.Start
	seg = seg.TrimLeftSpace(src)
	seg = seg.TrimRightSpace(src)
	line := seg.Value(src)
	row := east.NewTableRow(aligns)
	row.SetPos(start)
	pos, limit := 0, len(line)
	if limit > 0 && line[0] == '|' {
		pos++
	}
	if limit > 0 && line[limit-1] == '|' {
		limit--
	}
	col := 0
	for ; pos < limit; col++ {
		a := east.AlignNone
		if col < len(aligns) {
			a = aligns[col]
		} else if !header {
			return row
		}
		end := pos
		for end < limit && (line[end] != '|' || (end > 0 && line[end-1] == '\\')) {
			end++
		}
		cell := east.NewTableCell()
		cell.Alignment = a
		c := text.NewSegment(seg.Start+pos, seg.Start+end)
		c = c.TrimLeftSpace(src)
		cell.Lines().Append(c.TrimRightSpace(src))
		row.AppendChild(row, cell)
		pos = end + 1
	}
	for ; col < len(aligns); col++ {
		row.AppendChild(row, east.NewTableCell())
	}
	return row
}

// tablePipes drops the backslash of \| inside code spans in table
// cells: there it only kept the pipe from splitting the cell, and a
// code span would otherwise show it.
type tablePipes struct{}

func (tablePipes) Transform(doc *gast.Document, reader text.Reader, _ parser.Context) {
	src := reader.Source()
	_ = gast.Walk(doc, func(n gast.Node, entering bool) (gast.WalkStatus, error) {
		if !entering {
			return gast.WalkContinue, nil
		}
		if _, ok := n.(*gast.CodeSpan); !ok {
			return gast.WalkContinue, nil
		}
		if !inTableCell(n) {
			return gast.WalkSkipChildren, nil
		}
		for c := n.FirstChild(); c != nil; {
			next := c.NextSibling()
			if t, ok := c.(*gast.Text); ok {
				splitEscapedPipes(n, t, src)
			}
			c = next
		}
		return gast.WalkSkipChildren, nil
	})
}

func inTableCell(n gast.Node) bool {
	for p := n.Parent(); p != nil; p = p.Parent() {
		if _, ok := p.(*east.TableCell); ok {
			return true
		}
	}
	return false
}

// splitEscapedPipes replaces t, a code span's text, by the pieces
// between the backslashes of its \| pairs.
func splitEscapedPipes(parent gast.Node, t *gast.Text, src []byte) {
	s := t.Segment
	cur := gast.Node(t)
	from := s.Start
	for k := s.Start; k+1 < s.Stop; k++ {
		if src[k] != '\\' || src[k+1] != '|' {
			continue
		}
		piece := s.WithStart(from)
		a := gast.NewRawTextSegment(piece.WithStop(k))
		parent.InsertAfter(parent, cur, a)
		cur = a
		from = k + 1
	}
	if cur == gast.Node(t) {
		return
	}
	parent.InsertAfter(parent, cur, gast.NewRawTextSegment(s.WithStart(from)))
	parent.RemoveChild(parent, t)
}

// strikeParser reads ~text~ and ~~text~~ as east.Strikethrough.
type strikeParser struct{}

func (strikeParser) Trigger() []byte { return []byte{'~'} }

func (strikeParser) Parse(_ gast.Node, block text.Reader, pc parser.Context) gast.Node {
	before := block.PrecendingCharacter()
	line, seg := block.PeekLine()
	d := parser.ScanDelimiter(line, before, 1, strikeDelims{})
	if d == nil || d.OriginalLength > 2 || before == '~' {
		return nil
	}
	d.Segment = seg.WithStop(seg.Start + d.OriginalLength)
	block.Advance(d.OriginalLength)
	pc.PushDelimiter(d)
	return d
}

func (strikeParser) CloseBlock(gast.Node, parser.Context) {}

type strikeDelims struct{}

func (strikeDelims) IsDelimiter(b byte) bool                   { return b == '~' }
func (strikeDelims) CanOpenCloser(o, c *parser.Delimiter) bool { return o.Char == c.Char }
func (strikeDelims) OnMatch(int) gast.Node                     { return east.NewStrikethrough() }

// taskBoxParser reads "[ ] " or "[x] " opening a list item's first
// block as an east.TaskCheckBox.
type taskBoxParser struct{}

func (taskBoxParser) Trigger() []byte { return []byte{'['} }

func (taskBoxParser) Parse(parent gast.Node, block text.Reader, _ parser.Context) gast.Node {
	item := parent.Parent()
	if item == nil || item.FirstChild() != parent || parent.HasChildren() {
		return nil
	}
	if _, ok := item.(*gast.ListItem); !ok {
		return nil
	}
	line, _ := block.PeekLine()
	if len(line) < 3 || line[0] != '[' || line[2] != ']' {
		return nil
	}
	mark := line[1]
	checked := mark == 'x' || mark == 'X'
	if !checked && !reSpace(mark) {
		return nil
	}
	n := 3
	for n < len(line) && reSpace(line[n]) {
		n++
	}
	block.Advance(n)
	return east.NewTaskCheckBox(checked)
}

func (taskBoxParser) CloseBlock(gast.Node, parser.Context) {}
