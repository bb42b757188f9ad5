package analysis

import (
	"fmt"
	"path"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// Word is one shell word after quote removal ("r"'m' and \rm are rm).
type Word struct {
	// Value is the word's text. Where parts are only known at run time
	// it holds just the literal parts, so it is not what will run.
	Value string
	// Dynamic: part of the word is only known at run time (a parameter or
	// command substitution, a glob or brace expansion, an ANSI-C escape).
	Dynamic bool
	// Splits: an unquoted expansion (or "$@") may make the word several
	// words, or none, at run time: $x may be "-v name".
	Splits bool
	// MayBeOption: no literal text precedes the word's first part known
	// only at run time, so it may turn out to be an option ("$a" may be
	// -v).
	MayBeOption bool
	// Tilde: the word starts with an unquoted ~ that bash expands. Home:
	// to the home directory (~ or ~/…), not to a directory it looks up
	// at run time (~user, ~+, ~-).
	Tilde, Home bool
}

// View is one way of reading a simple command: as written, or with a
// wrapper (sudo, env, timeout, …) stripped.
type View struct {
	Words []Word
	// Open: unknown words may follow (xargs appends its input).
	Open bool
}

// Command is one simple command of a line.
type Command struct {
	// Text is the command as written, for messages.
	Text string
	// Views are every reading of the command, the outermost first: what
	// is written, then each wrapped command (sudo rm, then rm). A deny
	// rule must catch every one of them.
	Views []View
	// Effective is the reading that says what the command is: the
	// innermost command, or the privileged one when a wrapper changes
	// privileges (allowing rm must not allow sudo rm). Nil when the
	// commands a string holds decide instead (bash -c, eval): they are
	// commands of the line in their own right.
	Effective *View
	// Neutral commands change nothing outside the shell (cd, echo,
	// true…).
	Neutral bool
	// ReadOnly commands change nothing at all (see readonly.go): the ones
	// plan mode may run.
	ReadOnly bool
}

// File is a file the line reads or writes: a redirection's target, or a
// file a program's option names (time -o).
type File struct {
	// Path is tilde-expanded and, when relative, relative to the
	// directory the line starts in.
	Path string
	// Dynamic: the path is only known at run time; Path is not it.
	Dynamic bool
	// Text is the redirection or option as written, for messages.
	Text string
}

// Line is what a command line does, as far as reading it can tell.
type Line struct {
	// Commands are every simple command the line may run.
	Commands []Command
	// Writes and Reads are the files its redirections (and some options)
	// write and read.
	Writes []File
	Reads  []File
	// Problems are the reasons the line cannot be fully read: for each,
	// something the line may do is not in Commands, Writes or Reads.
	Problems []string
	// Chdir: the line changes directory (cd, pushd, popd, env -C), so a
	// relative path is not known to be where it looks.
	Chdir bool
	// DynamicWrite: the line writes to a path known only at run time (also
	// a problem).
	DynamicWrite bool
}

// maxDepth bounds nested interpretation (bash -c inside eval inside …).
const maxDepth = 8

var parsers = sync.Pool{New: func() any { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }}

func parseShell(src string) (*syntax.File, error) {
	p := parsers.Get().(*syntax.Parser)
	defer parsers.Put(p)
	return p.Parse(strings.NewReader(src), "")
}

type analyzer struct {
	a    *Line
	home string
}

// Analyze reads a bash command line without running or expanding
// anything. home is the directory ~ stands for ("" when unknown: a path
// under ~ is then only known at run time).
func Analyze(src, home string) *Line {
	an := &analyzer{a: &Line{}, home: home}
	an.script(src, 0)
	return an.a
}

func (an *analyzer) problem(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	for _, p := range an.a.Problems {
		if p == msg {
			return
		}
	}
	an.a.Problems = append(an.a.Problems, msg)
}

// script analyses src, a whole command line or a string the shell will
// interpret (bash -c, eval, trap).
func (an *analyzer) script(src string, depth int) {
	if depth > maxDepth {
		an.problem("commands nest too deeply to analyse")
		return
	}
	f, err := parseShell(src)
	if err != nil {
		an.problem("the command line does not parse (%v)", err)
		return
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CallExpr:
			if len(n.Args) > 0 {
				words := make([]Word, len(n.Args))
				for i, w := range n.Args {
					words[i] = an.word(w)
				}
				an.simple(words, source(src, n), depth)
			}
		case *syntax.Redirect:
			an.redirect(n, src)
		case *syntax.Assign:
			an.assign(n)
		case *syntax.DeclClause:
			an.declOptions(n)
		case *syntax.WordIter: // for NAME in …, select NAME in …
			an.checkVar(n.Name.Value)
		case *syntax.ArithmCmd:
			an.arith(n.X)
		case *syntax.ArithmExp:
			an.arith(n.X)
		case *syntax.LetClause:
			for _, x := range n.Exprs {
				an.arith(x)
			}
		case *syntax.CStyleLoop:
			an.arith(n.Init)
			an.arith(n.Cond)
			an.arith(n.Post)
		case *syntax.ParamExp:
			if n.Excl && n.Names == 0 && !allElems(n) && !(n.Param != nil && strings.Contains("#?$!", n.Param.Value)) {
				// ${!x} reads the variable x names, and a subscript in
				// that name is arithmetic: x='a[$(rm -rf ~)]' runs rm.
				// (${!#} names a positional parameter by number.)
				an.problem("an indirect expansion (${!name}) reads a variable named only at run time (bash evaluates a subscript in the name as code)")
			}
			if n.Exp != nil && (n.Exp.Op == syntax.AssignUnset || n.Exp.Op == syntax.AssignUnsetOrNull) && n.Param != nil {
				an.checkVar(n.Param.Value) // ${NAME:=value} assigns
			}
			an.arith(n.Index)
			if n.Slice != nil {
				an.arith(n.Slice.Offset)
				an.arith(n.Slice.Length)
			}
		case *syntax.ArrayElem:
			an.arith(n.Index)
		case *syntax.TestClause:
			an.test(n.X)
		}
		return true
	})
}

func source(src string, n syntax.Node) string {
	s, e := int(n.Pos().Offset()), int(n.End().Offset())
	if s < 0 || e > len(src) || s >= e {
		return ""
	}
	return src[s:e]
}

// neutralCommands change nothing outside the shell process: they run
// without a rule (so "cd sub && git status" needs only git status allowed)
// but still obey deny and ask rules. Those that take variable names
// (printf -v, read, unset, wait -p, test -v) are neutral only with plain
// names: varBuiltin makes any other line unanalysable.
var neutralCommands = map[string]bool{
	"cd": true, "pushd": true, "popd": true, "dirs": true, "true": true, "false": true,
	":": true, "echo": true, "printf": true, "pwd": true, "test": true, "[": true,
	"unset": true, "read": true, "wait": true, "exit": true, "return": true,
	"break": true, "continue": true, "shift": true, "sleep": true, "set": true,
}

var shells = map[string]bool{"bash": true, "sh": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "ash": true}

// simple records one simple command, unwrapping the commands that run other
// commands so the inner command is what rules see.
func (an *analyzer) simple(words []Word, text string, depth int) {
	if depth > maxDepth {
		an.problem("commands nest too deeply to analyse")
		return
	}
	cmd := Command{Text: text}
	if cmd.Text == "" {
		cmd.Text = JoinWords(words)
	}
	cur := View{Words: words}
	cmd.Views = append(cmd.Views, cur)
	inner := 0            // index of the innermost command as written
	priv := -1            // index of the outermost privileged view
	innerDecides := false // bash -c / eval: the parsed inner commands decide
	neutral := false
	for steps := 0; len(cur.Words) > 0; steps++ {
		if steps > maxDepth {
			an.problem("%q wraps too many commands to analyse", cmd.Text)
			break
		}
		if cur.Words[0].Dynamic {
			an.problem("the command name in %q is only known at run time", cmd.Text)
			break
		}
		name := path.Base(cur.Words[0].Value)
		args := cur.Words[1:]
		if w, isWrapper := wrappers[name]; isWrapper {
			next, ok, open := w.unwrap(an, args, cmd.Text)
			if !ok {
				neutral = w.bare
				break
			}
			if w.privileged && priv < 0 {
				priv = inner
			}
			cur = View{Words: next, Open: cur.Open || open}
			cmd.Views = append(cmd.Views, cur)
			inner = len(cmd.Views) - 1
			continue
		}
		switch name {
		case "cd", "pushd", "popd":
			an.a.Chdir = true
		case "printf", "read", "mapfile", "readarray", "wait", "getopts", "unset", "test", "[",
			"declare", "typeset", "local", "export", "readonly":
			an.varBuiltin(name, args, cmd.Text)
		case "eval":
			an.eval(args, cmd.Text, depth)
			innerDecides = true
		case "trap":
			an.trap(args, cmd.Text, depth)
			neutral = true
		case "find":
			an.findExec(args, depth)
		case "git":
			cmd.Views = append(cmd.Views, an.gitViews(cur, cmd.Text)...)
		case "source", ".":
			an.source(args, cmd.Text)
		case "set":
			an.setOptions(args, cmd.Text)
		case "alias":
			// An alias changes what a later command name runs (with
			// expand_aliases, or in an interactive shell).
			for _, a := range args {
				if a.Dynamic || strings.Contains(a.Value, "=") {
					an.problem("%q defines an alias, which changes what later commands run", cmd.Text)
					break
				}
			}
		default:
			if shells[name] {
				innerDecides = an.shellDecides(args, cmd.Text, depth)
			}
		}
		break
	}
	switch {
	case priv >= 0:
		v := cmd.Views[priv]
		cmd.Effective = &v
	case innerDecides:
	default:
		// Not the last view: that may be a deny-only reading (git
		// without its global options, which may carry -c config).
		v := cmd.Views[inner]
		cmd.Effective = &v
		if len(v.Words) > 0 && !v.Words[0].Dynamic {
			cmd.Neutral = neutral || neutralCommands[v.Words[0].Value]
		}
	}
	cmd.ReadOnly = cmd.Effective == nil || (priv < 0 && readOnlyView(*cmd.Effective))
	an.a.Commands = append(an.a.Commands, cmd)
}

// findExec records the commands find runs for each match.
func (an *analyzer) findExec(args []Word, depth int) {
	for i := 0; i < len(args); i++ {
		switch args[i].Value {
		case "-exec", "-execdir", "-ok", "-okdir":
		default:
			continue
		}
		j := i + 1
		for j < len(args) && !(!args[j].Dynamic && (args[j].Value == ";" || args[j].Value == "+")) {
			j++
		}
		inner := make([]Word, 0, j-i-1)
		for _, w := range args[i+1 : j] {
			if strings.Contains(w.Value, "{}") {
				w.Dynamic = true
			}
			inner = append(inner, w)
		}
		if len(inner) == 0 {
			an.problem("find %s without a command", args[i].Value)
		} else {
			an.simple(inner, "", depth+1)
		}
		i = j
	}
}
