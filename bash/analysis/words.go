package analysis

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// word performs quote removal on w without expanding anything.
func (an *analyzer) word(w *syntax.Word) Word {
	if len(w.Parts) == 1 {
		if l, ok := w.Parts[0].(*syntax.Lit); ok && plainLit(l.Value) {
			return litWord(l.Value)
		}
	}
	var b strings.Builder
	var out Word
	for i, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			s, glob := unescapeLit(p.Value)
			out.Dynamic = out.Dynamic || glob
			out.Splits = out.Splits || glob
			// A glob may match a file named like an option (-v…).
			out.MayBeOption = out.MayBeOption || glob && b.Len() == 0 && strings.ContainsRune("*?[{", rune(p.Value[0]))
			b.WriteString(s)
			if i == 0 && strings.HasPrefix(p.Value, "~") {
				// The tilde prefix runs to the first slash; when it goes
				// on into a quoted or expanded part, it is not a home
				// directory.
				prefix, _, slash := strings.Cut(p.Value, "/")
				out.Tilde = true
				out.Home = prefix == "~" && (slash || len(w.Parts) == 1)
			}
		case *syntax.SglQuoted:
			// $'…' decodes escapes at run time; without a backslash it is
			// plain text.
			if p.Dollar && strings.ContainsRune(p.Value, '\\') {
				out.Dynamic = true
				out.MayBeOption = out.MayBeOption || b.Len() == 0
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				switch q := q.(type) {
				case *syntax.Lit:
					b.WriteString(unescapeDouble(q.Value))
				case *syntax.ParamExp:
					out.Dynamic = true
					if !numericParam(q) {
						out.MayBeOption = out.MayBeOption || b.Len() == 0
						out.Splits = out.Splits || allElems(q) // "$@"
					}
				default:
					out.Dynamic = true
					out.MayBeOption = out.MayBeOption || b.Len() == 0
				}
			}
		case *syntax.ParamExp:
			out.Dynamic = true
			if !numericParam(p) {
				out.MayBeOption = out.MayBeOption || b.Len() == 0
				out.Splits = true
			}
		case *syntax.ArithmExp: // one number, but a negative one starts with "-"
			out.Dynamic = true
			out.MayBeOption = out.MayBeOption || b.Len() == 0
		default: // command or process substitution, extglob
			out.Dynamic = true
			out.MayBeOption = out.MayBeOption || b.Len() == 0
			out.Splits = true
		}
	}
	out.Value = b.String()
	return out
}

// litWord is a literal word.
func litWord(s string) Word {
	w := Word{Value: s}
	if strings.HasPrefix(s, "~") {
		w.Tilde = true
		w.Home = s == "~" || strings.HasPrefix(s, "~/")
	}
	return w
}

// numericParam reports whether p expands to a number that cannot be an
// option or split into words ($?, $#, $$, $!, ${#x}), as long as IFS is
// not changed, which checkVar refuses.
func numericParam(p *syntax.ParamExp) bool {
	if p.Excl || p.Index != nil || p.Slice != nil || p.Repl != nil || p.Exp != nil || p.Names != 0 || p.Param == nil {
		return false
	}
	if p.Length {
		return true
	}
	switch p.Param.Value {
	case "?", "#", "$", "!":
		return true
	}
	return false
}

// allElems reports whether a quoted p still expands to several words
// ("$@", "${a[@]}").
func allElems(p *syntax.ParamExp) bool {
	if p.Param != nil && p.Param.Value == "@" {
		return true
	}
	if w, ok := p.Index.(*syntax.Word); ok && w.Lit() == "@" {
		return true
	}
	return false
}

// plainLit reports whether an unquoted literal needs no processing.
func plainLit(s string) bool {
	return !strings.ContainsAny(s, "\\*?[{")
}

// unescapeLit removes backslash escapes from an unquoted literal and
// reports whether it holds an unescaped glob or brace expansion, which would
// turn it into other words at run time ({rm,-rf,/} is three words).
func unescapeLit(s string) (string, bool) {
	var b strings.Builder
	glob := false
	braceOpen, braceSep := -1, false
	bracket := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			if i+1 < len(s) {
				i++
				if s[i] != '\n' {
					b.WriteByte(s[i])
				}
			}
			continue
		case '*', '?':
			glob = true
		case '[':
			bracket = true
		case ']':
			if bracket {
				glob = true
			}
		case '{':
			braceOpen, braceSep = i, false
		case ',':
			if braceOpen >= 0 {
				braceSep = true
			}
		case '.':
			if braceOpen >= 0 && i+1 < len(s) && s[i+1] == '.' {
				braceSep = true
			}
		case '}':
			if braceOpen >= 0 && braceSep {
				glob = true
			}
		}
		b.WriteByte(c)
	}
	return b.String(), glob
}

// unescapeDouble removes the escapes double quotes honour.
func unescapeDouble(s string) string {
	if !strings.ContainsRune(s, '\\') {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '$', '`', '"', '\\':
				i++
			case '\n':
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// JoinWords renders words as a command line (for messages and rules).
func JoinWords(ws []Word) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = quoteWord(w.Value)
	}
	return strings.Join(parts, " ")
}

func quoteWord(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`*?[]{}()<>|&;#~!=%^,") {
		return s
	}
	q, err := syntax.Quote(s, syntax.LangBash)
	if err != nil {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return q
}

// LiteralCommand splits a Bash rule's command into words with the shell parser.
// It reports whether the last word is an unquoted * (the "ls *" prefix
// form); any other run-time expansion in a rule is an error, since a rule
// must mean one thing.
func LiteralCommand(spec string) ([]string, bool, error) {
	f, err := parseShell(spec)
	if err != nil {
		return nil, false, fmt.Errorf("the command does not parse: %v", err)
	}
	if len(f.Stmts) != 1 {
		return nil, false, fmt.Errorf("a rule names one simple command; write one rule per command")
	}
	st := f.Stmts[0]
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(st.Redirs) > 0 || st.Negated || st.Background || len(call.Assigns) > 0 {
		return nil, false, fmt.Errorf("a rule names one simple command, without operators, redirections or assignments")
	}
	an := &analyzer{a: &Line{}}
	out := make([]string, 0, len(call.Args))
	star := false
	for i, w := range call.Args {
		if i == len(call.Args)-1 && w.Lit() == "*" {
			star = true
			break
		}
		v := an.word(w)
		if v.Dynamic {
			return nil, false, fmt.Errorf("%q expands at run time; wildcards are only supported as a trailing :* (quote the word to match it literally)", source(spec, w))
		}
		out = append(out, v.Value)
	}
	return out, star, nil
}
