package analysis

import (
	"fmt"
	"path"
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
			for j, q := range p.Parts {
				if pe, ok := q.(*syntax.ParamExp); ok && i == 0 && j == 0 && homeParam(pe) && an.home != "" {
					b.WriteString("~")
					out.Tilde, out.Home = true, true
					continue
				}
				switch q := q.(type) {
				case *syntax.Lit:
					b.WriteString(unescapeDouble(q.Value))
				case *syntax.ParamExp:
					out.Dynamic = true
					if !numericParam(q) {
						// "$@" makes each element a word of its own.
						out.MayBeOption = out.MayBeOption || (b.Len() == 0 || allElems(q)) && an.paramMayBeOption(q)
						out.Splits = out.Splits || allElems(q)
					}
				default:
					out.Dynamic = true
					out.MayBeOption = out.MayBeOption || b.Len() == 0
				}
			}
		case *syntax.ParamExp:
			if i == 0 && homeParam(p) && an.home != "" && an.taint.names["HOME"] == false {
				// $HOME/…: the home directory, as ~/… is (a line that sets
				// HOME is refused as unanalysable).
				b.WriteString("~")
				out.Tilde, out.Home = true, true
				continue
			}
			out.Dynamic = true
			if !numericParam(p) {
				// Unquoted, its value is split into words: any of them may
				// start one, whatever precedes it.
				out.MayBeOption = out.MayBeOption || an.paramMayBeOption(p)
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
	if !out.Dynamic && len(w.Parts) > 1 && braceAcrossParts(w) {
		// {"rm",-f,x}: brace expansion happens before quote removal, so
		// quoted parts do not stop it; the word becomes several.
		out.Dynamic, out.Splits = true, true
		if l, ok := w.Parts[0].(*syntax.Lit); ok && strings.HasPrefix(l.Value, "{") {
			out.MayBeOption = true
		}
	}
	return out
}

// braceAcrossParts reports whether a word made of several parts holds a
// brace expansion whose braces or commas are in its unquoted parts while
// other parts (quoted text, expansions) stand between them. The quoted
// parts count as plain text: only unquoted braces and commas expand.
func braceAcrossParts(w *syntax.Word) bool {
	var shape strings.Builder
	hasBrace := false
	for _, part := range w.Parts {
		if l, ok := part.(*syntax.Lit); ok {
			shape.WriteString(l.Value)
			hasBrace = hasBrace || strings.ContainsRune(l.Value, '{')
			continue
		}
		shape.WriteByte('x')
	}
	if !hasBrace {
		return false
	}
	_, glob := unescapeLit(shape.String())
	return glob
}

// homeParam reports whether p is plain $HOME or ${HOME}.
func homeParam(p *syntax.ParamExp) bool {
	return p.Param != nil && p.Param.Value == "HOME" && !p.Excl && !p.Length && p.Index == nil && p.Slice == nil &&
		p.Repl == nil && p.Exp == nil && p.Names == 0
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

// paramMayBeOption reports whether an expansion's value may start with a
// dash (or, split, hold a word that does): it is a positional parameter
// the line sets or passes to a function, a variable the line gives such a
// value (or reads from input, or from a command), an indirect expansion,
// or an operator that may put a dash in. A variable the line never sets
// comes from dsh's environment, which the model does not choose.
func (an *analyzer) paramMayBeOption(p *syntax.ParamExp) bool {
	if p.Param == nil || p.Excl {
		return true
	}
	for len(an.untainted) > 0 {
		f := an.untainted[0]
		an.untainted = an.untainted[1:]
		an.collectTaint(f)
	}
	name := p.Param.Value
	switch {
	case name == "@" || name == "*" || isDigits(name):
		if an.taint.positional || name != "0" && an.taint.all {
			return true
		}
	case an.taint.names[name] || an.taint.all:
		return true
	}
	if p.Exp != nil && p.Exp.Word != nil {
		switch p.Exp.Op {
		case syntax.DefaultUnset, syntax.DefaultUnsetOrNull, syntax.AssignUnset, syntax.AssignUnsetOrNull,
			syntax.AlternateUnset, syntax.AlternateUnsetOrNull:
			if an.optionLike(p.Exp.Word) {
				return true
			}
		}
	}
	if p.Repl != nil && p.Repl.With != nil {
		if w := an.word(p.Repl.With); w.Dynamic || strings.ContainsRune(w.Value, '-') {
			return true
		}
	}
	return false
}

// optionLike reports whether a value the line assigns may start a word
// with a dash once expanded and split (it starts with one, holds one after
// white space, or is itself only known at run time), or name a path that
// may lead anywhere (absolute, under a home directory, climbing out).
func (an *analyzer) optionLike(w *syntax.Word) bool {
	v := an.word(w)
	if v.Dynamic || strings.HasPrefix(v.Value, "-") || v.Tilde || strings.HasPrefix(v.Value, "/") || strings.HasPrefix(v.Value, "..") {
		return true // an option, or a path that may lead anywhere
	}
	for _, sep := range []string{" -", "\t-", "\n-"} {
		if strings.Contains(v.Value, sep) {
			return true
		}
	}
	return false
}

// taint are the variables whose values may start with a dash.
type taint struct {
	names map[string]bool
	// positional: the positional parameters may (set --, a function's
	// arguments); all: the line may set any variable (read "$name").
	positional, all bool
}

func (t *taint) add(name string) {
	if t.names == nil {
		t.names = map[string]bool{}
	}
	t.names[name] = true
}

// taintBuiltins set the variables they name from input or arguments.
var taintBuiltins = map[string]bool{
	"read": true, "mapfile": true, "readarray": true, "getopts": true, "printf": true, "wait": true,
	"declare": true, "typeset": true, "local": true, "export": true, "readonly": true,
}

// collectTaint finds, before the commands are read, the variables of f
// that may hold an option: the analysis does not follow the order of
// commands, so an assignment anywhere counts everywhere. Values that name
// other variables are followed to a fixed point.
func (an *analyzer) collectTaint(f *syntax.File) {
	for round := 0; round < 4; round++ {
		before := len(an.taint.names)
		syntax.Walk(f, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.Assign:
				if n.Name == nil {
					if n.Naked && n.Value != nil && an.word(n.Value).Dynamic {
						an.taint.all = true // declare "$x"
					}
					return true
				}
				switch {
				case n.Array != nil:
					for _, e := range n.Array.Elems {
						if e.Value != nil && an.optionLike(e.Value) {
							an.taint.add(n.Name.Value)
						}
					}
				case n.Value != nil && an.optionLike(n.Value):
					an.taint.add(n.Name.Value)
				}
			case *syntax.WordIter:
				if len(n.Items) == 0 && !n.InPos.IsValid() {
					an.taint.add(n.Name.Value) // for x; do: the positional parameters
				}
				for _, it := range n.Items {
					if an.optionLike(it) {
						an.taint.add(n.Name.Value)
						break
					}
				}
			case *syntax.FuncDecl:
				an.taint.positional = true
			case *syntax.ParamExp:
				if n.Exp != nil && n.Param != nil && (n.Exp.Op == syntax.AssignUnset || n.Exp.Op == syntax.AssignUnsetOrNull) &&
					n.Exp.Word != nil && an.optionLike(n.Exp.Word) {
					an.taint.add(n.Param.Value)
				}
			case *syntax.CallExpr:
				if len(n.Args) == 0 {
					return true
				}
				name := path.Base(n.Args[0].Lit())
				switch {
				case name == "set" && len(n.Args) > 1 || name == "shift":
					an.taint.positional = true
				case taintBuiltins[name]:
					for _, a := range n.Args[1:] {
						w := an.word(a)
						switch {
						case w.Dynamic:
							an.taint.all = true
						case identRE().MatchString(w.Value):
							an.taint.add(w.Value)
						}
					}
				}
			}
			return true
		})
		if len(an.taint.names) == before {
			return
		}
	}
}
