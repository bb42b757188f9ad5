package search

import (
	"errors"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// pattern is a grep pattern compiled for both backends from one syntax tree.
type pattern struct {
	re   *regexp.Regexp // for the Go walker
	rust string         // the same automaton in Rust regex syntax, for rg
	// multiline lets matches span lines; otherwise each match lies within
	// one line.
	multiline bool
	// literal, when not empty, occurs in every match (line mode only). The
	// Go walker finds candidate lines with bytes.Index and runs the regexp
	// on those lines alone, as rg does; Go's regexp only skips ahead by
	// itself for a literal prefix, which "^func" or "\s+foo" lack.
	literal []byte
}

// errNewline is returned for a line-mode pattern that can only be satisfied
// by a line break. rg refuses such patterns too: it searches line by line.
var errNewline = errors.New(`it can match a line break ("\n"), which only multiline mode allows`)

// compilePattern parses expr as Go (RE2) syntax and prints it back twice,
// once for Go and once for rg's Rust engine, from the same tree:
//
//   - ^ and $ match at line boundaries (rg's reading);
//   - case-insensitive literals become explicit classes of their Unicode
//     simple-fold orbits, so both engines fold the same way;
//   - word boundaries are ASCII in both (Go's \b is ASCII; rg's default is
//     Unicode, so rg gets (?-u:\b));
//   - every class is printed as explicit code point ranges, so \w, \d, \s
//     and \pL mean Go's tables in both engines;
//   - outside multiline mode, line breaks are removed from every class and
//     "." and \A \z become their line-local forms, so no match can span
//     lines. A literal line break is an error.
func compilePattern(expr string, ignoreCase, multiline bool) (*pattern, error) {
	flags := syntax.Perl &^ syntax.OneLine
	if ignoreCase {
		flags |= syntax.FoldCase
	}
	if multiline {
		flags |= syntax.DotNL
	}
	tree, err := syntax.Parse(expr, flags)
	if err != nil {
		return nil, errorf("invalid pattern: %w", err)
	}
	if !multiline {
		if tree, err = lineLocal(tree); err != nil {
			return nil, errorf("invalid pattern %q: %w", expr, err)
		}
	}
	var goSrc, rustSrc strings.Builder
	printRegexp(&goSrc, tree, false)
	printRegexp(&rustSrc, tree, true)
	re, err := regexp.Compile(goSrc.String())
	if err != nil {
		// The printer only emits constructs Go parses; this is a bug.
		return nil, errorf("compiling translated pattern %q: %w", goSrc.String(), err)
	}
	p := &pattern{re: re, rust: rustSrc.String(), multiline: multiline}
	if !multiline {
		p.literal = []byte(requiredLiteral(tree))
	}
	return p, nil
}

// requiredLiteral returns the longest case-sensitive literal that every
// match of re contains, or "".
func requiredLiteral(re *syntax.Regexp) string {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase == 0 {
			return string(re.Rune)
		}
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiteral(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min > 0 {
			return requiredLiteral(re.Sub[0])
		}
	case syntax.OpConcat:
		best := ""
		for _, sub := range re.Sub {
			if l := requiredLiteral(sub); len(l) > len(best) {
				best = l
			}
		}
		return best
	}
	return ""
}

// lineLocal rewrites re so that it cannot match a line break.
func lineLocal(re *syntax.Regexp) (*syntax.Regexp, error) {
	switch re.Op {
	case syntax.OpLiteral:
		if slices.Contains(re.Rune, '\n') {
			return nil, errNewline
		}
	case syntax.OpCharClass:
		ranges := withoutNewline(re.Rune)
		if len(ranges) == 0 && len(re.Rune) > 0 {
			return nil, errNewline
		}
		re.Rune = ranges
	case syntax.OpAnyChar:
		re.Op = syntax.OpAnyCharNotNL
	case syntax.OpBeginText:
		re.Op = syntax.OpBeginLine
	case syntax.OpEndText:
		re.Op = syntax.OpEndLine
	}
	for i, sub := range re.Sub {
		s, err := lineLocal(sub)
		if err != nil {
			return nil, err
		}
		re.Sub[i] = s
	}
	return re, nil
}

// withoutNewline removes '\n' from a class's sorted [lo, hi] range pairs.
func withoutNewline(r []rune) []rune {
	out := make([]rune, 0, len(r)+2)
	for i := 0; i+1 < len(r); i += 2 {
		lo, hi := r[i], r[i+1]
		if lo > '\n' || hi < '\n' {
			out = append(out, lo, hi)
			continue
		}
		if lo < '\n' {
			out = append(out, lo, '\n'-1)
		}
		if hi > '\n' {
			out = append(out, '\n'+1, hi)
		}
	}
	return out
}

// printRegexp writes re in a syntax both Go and Rust's regex crate read the
// same way; rust selects the one construct that must differ (ASCII word
// boundaries). Sub-expressions of repetitions are always grouped, captures
// become plain groups, and everything outside printable ASCII is a \x{…}
// escape.
func printRegexp(b *strings.Builder, re *syntax.Regexp, rust bool) {
	switch re.Op {
	case syntax.OpNoMatch:
		writeNoMatch(b, rust)
	case syntax.OpEmptyMatch:
		b.WriteString("(?:)")
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 {
				writeFolded(b, r)
			} else {
				writeLiteral(b, r)
			}
		}
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			writeNoMatch(b, rust)
			return
		}
		b.WriteByte('[')
		for i := 0; i+1 < len(re.Rune); i += 2 {
			writeClassRune(b, re.Rune[i])
			if re.Rune[i+1] != re.Rune[i] {
				b.WriteByte('-')
				writeClassRune(b, re.Rune[i+1])
			}
		}
		b.WriteByte(']')
	case syntax.OpAnyCharNotNL:
		b.WriteString("(?-s:.)")
	case syntax.OpAnyChar:
		b.WriteString("(?s:.)")
	case syntax.OpBeginLine:
		b.WriteString("(?m:^)")
	case syntax.OpEndLine:
		b.WriteString("(?m:$)")
	case syntax.OpBeginText:
		b.WriteString(`\A`)
	case syntax.OpEndText:
		b.WriteString(`\z`)
	case syntax.OpWordBoundary:
		if rust {
			b.WriteString(`(?-u:\b)`)
		} else {
			b.WriteString(`\b`)
		}
	case syntax.OpNoWordBoundary:
		if rust {
			b.WriteString(`(?-u:\B)`)
		} else {
			b.WriteString(`\B`)
		}
	case syntax.OpCapture:
		b.WriteString("(?:")
		printRegexp(b, re.Sub[0], rust)
		b.WriteByte(')')
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		b.WriteString("(?:")
		printRegexp(b, re.Sub[0], rust)
		b.WriteByte(')')
		switch re.Op {
		case syntax.OpStar:
			b.WriteByte('*')
		case syntax.OpPlus:
			b.WriteByte('+')
		case syntax.OpQuest:
			b.WriteByte('?')
		default:
			b.WriteByte('{')
			b.WriteString(strconv.Itoa(re.Min))
			if re.Max != re.Min {
				b.WriteByte(',')
				if re.Max >= 0 {
					b.WriteString(strconv.Itoa(re.Max))
				}
			}
			b.WriteByte('}')
		}
		if re.Flags&syntax.NonGreedy != 0 {
			b.WriteByte('?')
		}
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if sub.Op == syntax.OpAlternate {
				b.WriteString("(?:")
				printRegexp(b, sub, rust)
				b.WriteByte(')')
			} else {
				printRegexp(b, sub, rust)
			}
		}
	case syntax.OpAlternate:
		for i, sub := range re.Sub {
			if i > 0 {
				b.WriteByte('|')
			}
			printRegexp(b, sub, rust)
		}
	default:
		// Every op syntax.Parse produces is handled above.
		panic("search: unexpected regexp op " + strconv.Itoa(int(re.Op)))
	}
}

// writeNoMatch writes an expression that never matches. An empty class is
// what Go prints, but Rust rejects it; "a word boundary that is not one"
// works in both.
func writeNoMatch(b *strings.Builder, rust bool) {
	if rust {
		b.WriteString(`(?:(?-u:\b)(?-u:\B))`)
	} else {
		b.WriteString(`(?:\b\B)`)
	}
}

// writeFolded writes r's simple case-fold orbit as a class, so the two
// engines' Unicode tables never decide what case-insensitive means.
func writeFolded(b *strings.Builder, r rune) {
	orbit := []rune{r}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		orbit = append(orbit, f)
	}
	if len(orbit) == 1 {
		writeLiteral(b, r)
		return
	}
	slices.Sort(orbit)
	b.WriteByte('[')
	for _, f := range orbit {
		writeClassRune(b, f)
	}
	b.WriteByte(']')
}

func writeLiteral(b *strings.Builder, r rune) {
	switch {
	case strings.ContainsRune(`\.+*?()|[]{}^$#&-~`, r):
		b.WriteByte('\\')
		b.WriteRune(r)
	case r >= ' ' && r <= '~':
		b.WriteRune(r)
	default:
		writeHex(b, r)
	}
}

// writeClassRune writes a class member. Only letters and digits go in raw:
// Rust gives "-", "&&", "~~" and "[" meaning inside classes.
func writeClassRune(b *strings.Builder, r rune) {
	if r < 0x80 && (r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
		b.WriteRune(r)
		return
	}
	writeHex(b, r)
}

func writeHex(b *strings.Builder, r rune) {
	b.WriteString(`\x{`)
	b.WriteString(strconv.FormatInt(int64(r), 16))
	b.WriteByte('}')
}
