package analysis

import (
	"fmt"
	"path"
	"slices"
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
	// MayBeOption: the word's value may be chosen by the line at run time
	// (a variable the line sets to such a value or reads from input, a
	// positional parameter it sets, a command's output, a glob), with no
	// literal text before it: it may turn out to be an option ("$a" may be
	// -v), or a path anywhere. A variable the line never sets comes from
	// dsh's environment and is not counted.
	MayBeOption bool
	// Tilde: the word starts with an unquoted ~ that bash expands. Home:
	// to the home directory (~ or ~/…), not to a directory it looks up
	// at run time (~user, ~+, ~-).
	Tilde, Home bool
	// under: the word is a path somewhere below this directory (find's {}
	// for a start point), though which one is only known at run time.
	under string
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
	// Paths are the arguments that name, or may name, files, and what
	// the program does with them as far as its grammar says; for a
	// program the analysis does not know, every argument that could be a
	// path, with AccessUnknown.
	Paths []PathArg
	// Hidden are the things the command does that its words do not show
	// as commands or files of the line: options that run a configured
	// program (git diff --ext-diff), load code (cargo --config), or write
	// files its program names (awk's print >). A command an option runs
	// when written on the line (go test -exec PROG, find -exec, ssh -o
	// ProxyCommand=…, sed's e) is also a command of the line in its own
	// right, and is listed here too.
	Hidden []string
	// Code: the command runs code written on the line in a language the
	// analysis does not read (python -c, perl -e, awk's system(), sed's
	// s///e). That code can run any program, and no deny rule can see
	// inside it.
	Code bool
	// Maybe are readings of what the command might run that the analysis
	// cannot confirm: for a program it does not know, every argument that
	// could name a program starts one (with whatever follows), and an
	// argument holding a command line is read as one. A rule that matches
	// one can only make the line ask: the program may or may not run it.
	Maybe []View
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
	// Dirs are the directories, besides the one it starts in, that the
	// line's commands may run in after a cd, pushd or env -C with a
	// literal target: relative to the starting directory, or absolute. A
	// relative path of the line may be relative to any of them (a cd may
	// fail, and the analysis does not follow the order of commands).
	Dirs []string
	// DirUnknown: the line changes directory to somewhere known only at
	// run time (cd "$d", cd -, a cd in a loop or function, too many
	// directories to follow), so a relative path may be anywhere.
	DirUnknown bool
	// Network are redirections to /dev/tcp/… and /dev/udp/…, which bash
	// turns into network connections.
	Network []File
	// Links: the line creates links (ln, cp -s), so a path it uses later
	// may lead somewhere the analysis did not see when it looked.
	Links bool
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
	// loops are the spans (byte offsets) of the loops and function bodies
	// of the script being read: a command in one may run many times.
	loops [][2]int
	// inLoop: the command being read is in a loop or function body, or
	// in a string run by one (bash -c inside a loop).
	inLoop, outerLoop bool
	// taint are the variables whose values may be options, once the
	// scripts in untainted are looked at.
	taint     taint
	untainted []*syntax.File
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
	// Which variables may hold options is worked out when a word first
	// needs it: most lines expand no variable at all.
	an.untainted = append(an.untainted, f)
	savedLoops, savedOuter := an.loops, an.outerLoop
	an.loops, an.outerLoop = nil, an.outerLoop || an.inLoop
	defer func() { an.loops, an.outerLoop = savedLoops, savedOuter }()
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.WhileClause, *syntax.ForClause, *syntax.FuncDecl:
			an.loops = append(an.loops, [2]int{int(n.Pos().Offset()), int(n.End().Offset())})
		case *syntax.CallExpr:
			an.inLoop = an.outerLoop || an.within(n.Pos().Offset())
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
			if n.Exp != nil && n.Exp.Op == syntax.OtherParamOps && (n.Exp.Word == nil || strings.Contains(n.Exp.Word.Lit(), "P") || n.Exp.Word.Lit() == "") {
				// ${x@P} expands the value as a prompt string, and prompt
				// expansion runs the command substitutions in it.
				an.problem("${…@P} expands a value as a prompt string, which runs the commands in it: the line may run anything")
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

// within reports whether offset lies in a loop or function body of the
// script being read.
func (an *analyzer) within(offset uint) bool {
	for _, l := range an.loops {
		if int(offset) >= l[0] && int(offset) < l[1] {
			return true
		}
	}
	return false
}

// maxDirs bounds the directories a line may run in that the analysis
// follows; beyond it, the directory is unknown.
const maxDirs = 16

// cd records cd DIR and pushd DIR (options and pushd's stack rotations,
// which return to directories the line has been in, left aside).
func (an *analyzer) cd(name string, args []Word) {
	for i, a := range args {
		switch {
		case a.Dynamic:
			an.a.DirUnknown = true
			return
		case a.Value == "--":
			if i+1 < len(args) {
				an.chdir(args[i+1])
				return
			}
		case a.Value == "-":
			an.a.DirUnknown = true // $OLDPWD
			return
		case strings.HasPrefix(a.Value, "-") || name == "pushd" && strings.HasPrefix(a.Value, "+"):
			if name == "pushd" && (a.Value == "-n" || len(a.Value) > 1 && a.Value[1] >= '0' && a.Value[1] <= '9') {
				return
			}
			continue
		default:
			an.chdir(a)
			return
		}
	}
	if name == "cd" { // cd alone: home
		w := litWord("~")
		an.chdir(w)
	}
}

// chdir records that later commands may run in dir (relative to any
// directory the line may already be in).
func (an *analyzer) chdir(dir Word) {
	if an.a.DirUnknown {
		return
	}
	p, ok := an.pathWord(dir)
	if !ok || an.inLoop || strings.ContainsAny(p, "*?[") {
		an.a.DirUnknown = true
		an.a.Dirs = nil
		return
	}
	if p == "" {
		return
	}
	bases := append([]string{"."}, an.a.Dirs...)
	for _, b := range bases {
		d := path.Clean(p)
		if !path.IsAbs(p) {
			d = path.Join(b, p)
		}
		if d == "." || slices.Contains(an.a.Dirs, d) {
			continue
		}
		an.a.Dirs = append(an.a.Dirs, d)
		if len(an.a.Dirs) > maxDirs {
			an.a.DirUnknown = true
			an.a.Dirs = nil
			return
		}
	}
}

// evaluating checks the builtins that run or expand strings: compgen and
// complete -C run a command line and -W expands its words (command
// substitutions included); hash -p makes a name run another program;
// enable -f loads a builtin from a shared object; fc runs commands from
// the history; bind -x binds keys to commands.
func (an *analyzer) evaluating(name string, args []Word, text string, depth int) {
	switch name {
	case "compgen", "complete":
		_, ok := builtinOpts(args, "oAGWFCXPS", func(c byte, v Word) {
			switch {
			case c == 'C' && v.Dynamic, c == 'W' && (v.Dynamic || strings.ContainsAny(v.Value, "$`")):
				an.problem("%q runs or expands text known only at run time (-%c)", text, c)
			case c == 'C':
				an.script(v.Value, depth+1)
			}
		})
		if !ok {
			an.problem("%q: an option is only known at run time", text)
		}
	case "hash":
		if hasOption(args, "-p") || len(args) > 0 && strings.HasPrefix(args[0].Value, "-") && strings.ContainsRune(args[0].Value, 'p') {
			an.problem("%q makes a command name run another program (hash -p)", text)
		}
	case "enable":
		for _, a := range args {
			if a.Dynamic || strings.HasPrefix(a.Value, "-") && strings.ContainsRune(a.Value, 'f') {
				an.problem("%q loads a builtin from a shared object (enable -f)", text)
				break
			}
		}
	case "fc":
		an.problem("%q runs commands from the history (fc)", text)
	case "bind":
		an.problem("%q binds keys to commands (bind -x)", text)
	}
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
	"break": true, "continue": true, "shift": true, "sleep": true, "set": true, "compgen": true, "complete": true,
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
		wrappersOnce.Do(initWrappers)
		if w, isWrapper := wrappers[name]; isWrapper {
			u := w.unwrap(an, args, cmd.Text, depth)
			if w.privileged && (u.ok || u.viaShell) && priv < 0 {
				priv = inner
			}
			if u.viaShell {
				innerDecides = true
				break
			}
			if !u.ok {
				neutral = w.bare
				break
			}
			cur = View{Words: u.next, Open: cur.Open || u.open}
			cmd.Views = append(cmd.Views, cur)
			inner = len(cmd.Views) - 1
			continue
		}
		switch name {
		case "cd", "pushd":
			an.cd(name, args)
		case "compgen", "complete", "hash", "enable", "fc", "bind":
			an.evaluating(name, args, cmd.Text, depth)
		case "printf", "read", "mapfile", "readarray", "wait", "getopts", "unset", "test", "[",
			"declare", "typeset", "local", "export", "readonly":
			an.varBuiltin(name, args, cmd.Text)
		case "eval":
			an.eval(args, cmd.Text, depth)
			innerDecides = true
		case "trap":
			an.trap(args, cmd.Text, depth)
			neutral = true
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
	if !innerDecides && !cmd.Neutral {
		an.examine(&cmd, cmd.Views[inner], depth)
	}
	cmd.ReadOnly = cmd.Effective == nil || (priv < 0 && readOnlyView(*cmd.Effective) && !cmd.Code && len(cmd.Hidden) == 0 && !writesPaths(cmd.Paths))
	an.a.Commands = append(an.a.Commands, cmd)
}

func writesPaths(ps []PathArg) bool {
	for _, p := range ps {
		if p.Access == AccessWrite {
			return true
		}
	}
	return false
}
