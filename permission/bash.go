package permission

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// This file turns a bash command line into what rules are matched against:
// every simple command it would run (with wrappers such as sudo, env,
// timeout and xargs unwrapped), every file it redirects output to, and the
// reasons, if any, it cannot be analysed. It never runs anything and never
// expands anything: a word whose value is only known at run time is marked
// dynamic, and the decision treats "might match" with the suspicion it
// deserves.

// word is one shell word after quote removal.
type word struct {
	val string
	// dyn: part of the word is only known at run time (a parameter or
	// command substitution, an unquoted glob or brace expansion, an ANSI-C
	// escape), so val is not what will run.
	dyn bool
	// split: an unquoted expansion (or "$@") may make the word several
	// words, or none, at run time: $x may be "-v name".
	split bool
	// lead: no literal text precedes the word's first part known only at
	// run time, so it may turn out to be an option ("$a" may be -v).
	lead bool
	// tilde: the word starts with an unquoted ~ that bash expands; home:
	// to the home directory (~ or ~/…), not to a directory it looks up at
	// run time (~user, ~+, ~-).
	tilde, home bool
}

// view is one way of reading a simple command: as written, or with a
// wrapper (sudo, env, timeout, …) stripped.
type view struct {
	words []word
	// open: unknown words may follow (xargs appends its input).
	open bool
}

// command is one simple command of a line.
type command struct {
	// text is the command as written, for messages.
	text string
	// views are every reading deny and ask rules are matched against, the
	// outermost first: a deny on rm must catch "sudo rm" and "xargs rm".
	views []view
	// allow is the reading allow rules must match: the innermost command,
	// or the privileged one when sudo is involved (allowing rm must not
	// allow sudo rm). Nil when inner commands decide (bash -c, eval).
	allow *view
	// neutral commands change nothing outside the shell (cd, echo, true…);
	// they run without a rule but still obey deny and ask rules.
	neutral  bool
	readOnly bool
}

// target is a file a redirection (or time -o) writes or reads.
type target struct {
	path string // tilde expanded; relative to the command's directory
	dyn  bool
	text string
}

// analysis is everything rules need to know about a command line.
type analysis struct {
	cmds     []command
	writes   []target
	reads    []target
	problems []string
	// chdir: the line changes directory (cd, pushd, popd, env -C), so a
	// relative redirection target is not known to be where it looks.
	chdir bool
	// dynWrite: the line writes to a path known only at run time (also a
	// problem), which Edit and Write rules may cover.
	dynWrite bool
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
	a    *analysis
	home string
}

// analyzeBash analyses a command line. home expands ~ in redirection
// targets.
func analyzeBash(src, home string) *analysis {
	an := &analyzer{a: &analysis{}, home: home}
	an.script(src, 0)
	return an.a
}

func (an *analyzer) problem(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	for _, p := range an.a.problems {
		if p == msg {
			return
		}
	}
	an.a.problems = append(an.a.problems, msg)
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
				words := make([]word, len(n.Args))
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

// word performs quote removal on w without expanding anything.
func (an *analyzer) word(w *syntax.Word) word {
	if len(w.Parts) == 1 {
		if l, ok := w.Parts[0].(*syntax.Lit); ok && plainLit(l.Value) {
			return litWord(l.Value)
		}
	}
	var b strings.Builder
	var out word
	for i, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			s, glob := unescapeLit(p.Value)
			out.dyn = out.dyn || glob
			out.split = out.split || glob
			// A glob may match a file named like an option (-v…).
			out.lead = out.lead || glob && b.Len() == 0 && strings.ContainsRune("*?[{", rune(p.Value[0]))
			b.WriteString(s)
			if i == 0 && strings.HasPrefix(p.Value, "~") {
				// The tilde prefix runs to the first slash; when it goes
				// on into a quoted or expanded part, it is not a home
				// directory.
				prefix, _, slash := strings.Cut(p.Value, "/")
				out.tilde = true
				out.home = prefix == "~" && (slash || len(w.Parts) == 1)
			}
		case *syntax.SglQuoted:
			// $'…' decodes escapes at run time; without a backslash it is
			// plain text.
			if p.Dollar && strings.ContainsRune(p.Value, '\\') {
				out.dyn = true
				out.lead = out.lead || b.Len() == 0
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				switch q := q.(type) {
				case *syntax.Lit:
					b.WriteString(unescapeDouble(q.Value))
				case *syntax.ParamExp:
					out.dyn = true
					if !numericParam(q) {
						out.lead = out.lead || b.Len() == 0
						out.split = out.split || allElems(q) // "$@"
					}
				default:
					out.dyn = true
					out.lead = out.lead || b.Len() == 0
				}
			}
		case *syntax.ParamExp:
			out.dyn = true
			if !numericParam(p) {
				out.lead = out.lead || b.Len() == 0
				out.split = true
			}
		case *syntax.ArithmExp: // one number, but a negative one starts with "-"
			out.dyn = true
			out.lead = out.lead || b.Len() == 0
		default: // command or process substitution, extglob
			out.dyn = true
			out.lead = out.lead || b.Len() == 0
			out.split = true
		}
	}
	out.val = b.String()
	return out
}

// litWord is a literal word.
func litWord(s string) word {
	w := word{val: s}
	if strings.HasPrefix(s, "~") {
		w.tilde = true
		w.home = s == "~" || strings.HasPrefix(s, "~/")
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
func (an *analyzer) simple(words []word, text string, depth int) {
	if depth > maxDepth {
		an.problem("commands nest too deeply to analyse")
		return
	}
	cmd := command{text: text}
	if cmd.text == "" {
		cmd.text = joinWords(words)
	}
	cur := view{words: words}
	cmd.views = append(cmd.views, cur)
	inner := 0            // index of the innermost command as written
	priv := -1            // index of the outermost privileged view
	innerDecides := false // bash -c / eval: the parsed inner commands decide
	neutral := false
	for steps := 0; len(cur.words) > 0; steps++ {
		if steps > maxDepth {
			an.problem("%q wraps too many commands to analyse", cmd.text)
			break
		}
		if cur.words[0].dyn {
			an.problem("the command name in %q is only known at run time", cmd.text)
			break
		}
		name := path.Base(cur.words[0].val)
		args := cur.words[1:]
		var next []word
		ok, open := false, false
		switch name {
		case "cd", "pushd", "popd":
			an.a.chdir = true
		case "env":
			next, ok = an.unwrapEnv(args, cmd.text)
		case "sudo", "doas":
			const short, long = "-u -g -C -D -h -p -r -t -T -U -R", "--user --group --close-from --chdir --host --prompt --role --type --command-timeout --other-user --chroot"
			if runsShell(args, short, long) {
				an.problem("%q runs a shell (sudo -s or -i) on a command line that cannot be checked", cmd.text)
			}
			next, ok = an.skipOptions(args, cmd.text, short, long)
			if ok && priv < 0 {
				priv = inner
			}
		case "nohup", "builtin", "busybox":
			next, ok = args, len(args) > 0
		case "exec":
			next, ok = an.skipOptions(args, cmd.text, "-a", "")
			neutral = !ok
		case "time":
			next, ok = an.unwrapTime(args, cmd.text)
		case "timeout":
			if next, ok = an.skipOptions(args, cmd.text, "-s -k", "--signal --kill-after"); ok {
				next, ok = next[1:], len(next) > 1 // the duration
			}
		case "nice":
			next, ok = an.skipOptions(args, cmd.text, "-n", "--adjustment")
		case "stdbuf":
			next, ok = an.skipOptions(args, cmd.text, "-i -o -e", "--input --output --error")
		case "setsid":
			next, ok = an.skipOptions(args, cmd.text, "", "")
		case "ionice":
			if hasOption(args, "-p", "-P", "-u", "--pid", "--pgid", "--uid") {
				break
			}
			next, ok = an.skipOptions(args, cmd.text, "-c -n", "--class --classdata")
		case "command":
			if hasOption(args, "-v", "-V") {
				break
			}
			next, ok = an.skipOptions(args, cmd.text, "", "")
		case "xargs":
			next, ok, open = an.unwrapXargs(args, cmd.text)
		case "printf", "read", "mapfile", "readarray", "wait", "getopts", "unset", "test", "[",
			"declare", "typeset", "local", "export", "readonly":
			an.varBuiltin(name, args, cmd.text)
		case "eval":
			an.eval(args, cmd.text, depth)
			innerDecides = true
		case "trap":
			an.trap(args, cmd.text, depth)
			neutral = true
		case "find":
			an.findExec(args, depth)
		case "git":
			cmd.views = append(cmd.views, an.gitViews(cur, cmd.text)...)
		case "source", ".":
			an.source(args, cmd.text)
		case "set":
			an.setOptions(args, cmd.text)
		case "alias":
			// An alias changes what a later command name runs (with
			// expand_aliases, or in an interactive shell).
			for _, a := range args {
				if a.dyn || strings.Contains(a.val, "=") {
					an.problem("%q defines an alias, which changes what later commands run", cmd.text)
					break
				}
			}
		default:
			if shells[name] {
				innerDecides = an.shellDecides(args, cmd.text, depth)
			}
		}
		if !ok || innerDecides {
			break
		}
		cur = view{words: next, open: cur.open || open}
		cmd.views = append(cmd.views, cur)
		inner = len(cmd.views) - 1
	}
	switch {
	case priv >= 0:
		v := cmd.views[priv]
		cmd.allow = &v
	case innerDecides:
	default:
		// Not the last view: that may be a deny-only reading (git
		// without its global options, which may carry -c config).
		v := cmd.views[inner]
		cmd.allow = &v
		if len(v.words) > 0 && !v.words[0].dyn {
			cmd.neutral = neutral || neutralCommands[v.words[0].val]
		}
	}
	cmd.readOnly = cmd.allow == nil || (priv < 0 && readOnlyView(*cmd.allow))
	an.a.cmds = append(an.a.cmds, cmd)
}

// skipOptions skips a wrapper's options: argShort and argLong list the
// options that take a value (space separated). It returns the wrapped
// command, or false when there is none. An option whose value is only known
// at run time makes the line unanalysable.
func (an *analyzer) skipOptions(args []word, text, argShort, argLong string) ([]word, bool) {
	i := 0
	for i < len(args) {
		a := args[i]
		if a.dyn {
			an.problem("an option in %q is only known at run time", text)
			return nil, false
		}
		v := a.val
		switch {
		case v == "--":
			i++
			return args[i:], i < len(args)
		case v == "-" || !strings.HasPrefix(v, "-"):
			return args[i:], true
		case strings.HasPrefix(v, "--"):
			if !strings.Contains(v, "=") && longOptionIn(argLong, v) {
				i++
			}
		case v[1] >= '0' && v[1] <= '9':
			// nice -10
		default:
			// A cluster (-nu root): as getopt reads it, the first letter
			// that takes a value ends the cluster; the value is the rest
			// of the word, or the next word.
			for j := 1; j < len(v); j++ {
				if fieldsContain(argShort, "-"+v[j:j+1]) {
					if j == len(v)-1 {
						i++
					}
					break
				}
			}
		}
		i++
	}
	return nil, false
}

// longOptionIn reports whether the long option opt is in list, or
// abbreviates one in it: getopt_long takes any unambiguous prefix (sudo
// --us bob is sudo --user bob), and an ambiguous one is an error anyway.
func longOptionIn(list, opt string) bool {
	for _, f := range strings.Fields(list) {
		if strings.HasPrefix(f, opt) {
			return true
		}
	}
	return false
}

func fieldsContain(list, s string) bool {
	for _, f := range strings.Fields(list) {
		if f == s {
			return true
		}
	}
	return false
}

func hasOption(args []word, opts ...string) bool {
	for _, a := range args {
		for _, o := range opts {
			if a.val == o || strings.HasPrefix(a.val, o+"=") {
				return true
			}
		}
	}
	return false
}

// unwrapEnv reads env's options and assignments. A variable that decides
// which code runs (PATH, LD_PRELOAD, …) makes the line unanalysable.
func (an *analyzer) unwrapEnv(args []word, text string) ([]word, bool) {
	i := 0
	for i < len(args) {
		a := args[i]
		if a.dyn {
			an.problem("an argument of env in %q is only known at run time", text)
			return nil, false
		}
		v := a.val
		switch {
		case v == "--":
			i++
			return args[i:], i < len(args)
		case v == "-" || v == "-i" || v == "--ignore-environment" || v == "-0" || v == "--null" || v == "-v" || v == "--debug":
			i++
		case v == "-u" || v == "--unset":
			i += 2
		case strings.HasPrefix(v, "--unset=") || strings.HasPrefix(v, "-u"):
			i++
		case v == "-C" || v == "--chdir":
			an.a.chdir = true
			i += 2
		case strings.HasPrefix(v, "--chdir=") || strings.HasPrefix(v, "-C"):
			an.a.chdir = true
			i++
		case strings.HasPrefix(v, "-S") || strings.HasPrefix(v, "--split-string"):
			an.problem("env -S builds a command from a string; write the command directly")
			return nil, false
		case strings.HasPrefix(v, "-"):
			an.problem("env option %s in %q is not understood", v, text)
			return nil, false
		case isAssignment(v):
			an.checkVar(assignName(v))
			i++
		default:
			return args[i:], true
		}
	}
	return nil, false
}

var (
	assignRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*\+?=`)
	identRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// isAssignment reports whether s reads as NAME=value or NAME+=value.
func isAssignment(s string) bool { return assignRE.MatchString(s) }

// assignName is the variable an assignment word sets.
func assignName(s string) string {
	return strings.TrimSuffix(s[:strings.IndexByte(s, '=')], "+")
}

// unwrapTime reads GNU time's options; -o writes a file.
func (an *analyzer) unwrapTime(args []word, text string) ([]word, bool) {
	i := 0
	for i < len(args) {
		a := args[i]
		if a.dyn {
			an.problem("an option in %q is only known at run time", text)
			return nil, false
		}
		v := a.val
		switch {
		case v == "--":
			i++
			return args[i:], i < len(args)
		case strings.HasPrefix(v, "--"):
			// getopt_long: --out t.log is --output t.log.
			name, val, eq := strings.Cut(v, "=")
			switch {
			case abbreviates(name, "--output") && eq:
				an.output(litWord(val), text)
			case abbreviates(name, "--output", "--format") && !eq:
				if i+1 < len(args) && abbreviates(name, "--output") {
					an.output(args[i+1], text)
				}
				i++
			}
			i++
		case strings.HasPrefix(v, "-") && v != "-":
			// A cluster (-ao t.log, -ot.log): o and f take the rest of
			// the word or the next word.
			for j := 1; j < len(v); j++ {
				if v[j] != 'o' && v[j] != 'f' {
					continue
				}
				val := litWord(v[j+1:])
				if j == len(v)-1 {
					if i+1 >= len(args) {
						break
					}
					i++
					val = args[i]
				}
				if v[j] == 'o' {
					an.output(val, text)
				}
				break
			}
			i++
		default:
			return args[i:], true
		}
	}
	return nil, false
}

func (an *analyzer) output(w word, text string) {
	p, ok := an.pathWord(w)
	if !ok {
		an.problem("%q writes to a path known only at run time", text)
		an.a.dynWrite = true
		return
	}
	an.a.writes = append(an.a.writes, target{path: p, text: text})
}

// xargsLong are GNU xargs' long options, and whether each takes the next
// word as its value (--max-args 1). --eof, --replace and --max-lines take
// an optional value, only after "=".
var xargsLong = map[string]bool{
	"--null": false, "--arg-file": true, "--delimiter": true, "--eof": false, "--replace": false,
	"--max-lines": false, "--max-args": true, "--max-procs": true, "--max-chars": true,
	"--process-slot-var": true, "--interactive": false, "--no-run-if-empty": false, "--verbose": false,
	"--exit": false, "--open-tty": false, "--show-limits": false, "--help": false, "--version": false,
}

// longOption resolves a long option the way getopt_long does: its exact
// name, or the one option it abbreviates (xargs --max-a 1). It reports
// false when the name matches no option, or several.
func longOption(name string, opts map[string]bool) (string, bool) {
	if _, ok := opts[name]; ok {
		return name, true
	}
	found := ""
	for o := range opts {
		if strings.HasPrefix(o, name) {
			if found != "" {
				return "", false
			}
			found = o
		}
	}
	return found, found != ""
}

// unwrapXargs reads xargs' options as its getopt does, so the command is
// not mistaken for an option's value, nor a value for the command. The
// command gets the input appended (open view) or substituted for the
// replace string (dynamic words). With no command, xargs runs echo.
func (an *analyzer) unwrapXargs(args []word, text string) ([]word, bool, bool) {
	// Short options that take a value: the rest of the word, or the next
	// word. -i, -e and -l take only the rest of the word.
	const valued = "aEILnPsd"
	replace := ""
	i := 0
loop:
	for i < len(args) {
		a := args[i]
		if a.dyn {
			an.problem("an option in %q is only known at run time", text)
			return nil, false, false
		}
		v := a.val
		switch {
		case v == "--":
			i++
			break loop
		case v == "-" || !strings.HasPrefix(v, "-"):
			break loop
		case strings.HasPrefix(v, "--"):
			name, val, eq := strings.Cut(v, "=")
			opt, ok := longOption(name, xargsLong)
			if !ok {
				an.problem("xargs option %s in %q is not understood (it may take the next word as its value)", name, text)
				return nil, false, false
			}
			if opt == "--replace" {
				replace = "{}"
				if eq {
					replace = val
				}
			}
			if xargsLong[opt] && !eq {
				i++
			}
		default:
		cluster:
			for j := 1; j < len(v); j++ {
				c, rest := v[j], v[j+1:]
				switch {
				case c == 'i':
					replace = "{}"
					if rest != "" {
						replace = rest
					}
				case c == 'e' || c == 'l':
				case strings.IndexByte(valued, c) >= 0:
					if rest == "" && i+1 < len(args) {
						i++
						rest = args[i].val
						if c == 'I' && args[i].dyn {
							an.problem("%q replaces a string known only at run time", text)
							return nil, false, false
						}
					}
					if c == 'I' {
						replace = rest
					}
				default:
					continue
				}
				break cluster // the value, if any, ends the cluster
			}
		}
		i++
	}
	inner := args[i:]
	if len(inner) == 0 {
		return []word{{val: "echo"}}, true, true
	}
	if replace == "" {
		return inner, true, true
	}
	out := make([]word, len(inner))
	for j, w := range inner {
		out[j] = w
		if j > 0 && strings.Contains(w.val, replace) {
			out[j].dyn = true
		}
	}
	if strings.Contains(out[0].val, replace) {
		out[0].dyn = true
	}
	return out, true, false
}

// eval runs its arguments joined by spaces as a command line (after a
// first "--", which ends eval's options: eval -- 'rm x' runs rm).
func (an *analyzer) eval(args []word, text string, depth int) {
	if len(args) > 0 && !args[0].dyn && args[0].val == "--" {
		args = args[1:]
	}
	parts := make([]string, len(args))
	for i, a := range args {
		if a.dyn {
			an.problem("%q evaluates a string known only at run time", text)
			return
		}
		parts[i] = a.val
	}
	an.script(strings.Join(parts, " "), depth+1)
}

// trap's first operand is a command line run later (also after "--":
// trap -- 'rm x' EXIT). With -l or -p it prints, with one operand or "-"
// it resets handlers: nothing is installed.
func (an *analyzer) trap(args []word, text string, depth int) {
	if len(args) > 0 && !args[0].dyn && strings.HasPrefix(args[0].val, "-") && args[0].val != "-" {
		if args[0].val != "--" {
			return // -l, -p (other options are errors)
		}
		args = args[1:]
	}
	if len(args) < 2 {
		return
	}
	if args[0].dyn {
		an.problem("%q installs a handler known only at run time", text)
		return
	}
	if args[0].val != "-" {
		an.script(args[0].val, depth+1)
	}
}

// shellInput is where a shell reads its commands from.
type shellInput int

const (
	shellStdin  shellInput = iota // standard input: sh -s, or no operand
	shellString                   // the -c string, a word of the line
	shellFile                     // a script file
	shellNone                     // nothing: --version, --help, -c without a string
)

// shellScript reads a shell's arguments the way bash does and returns its
// -c string or script file, or where else it reads commands from. It also
// reports, as unsafe, options that make the -c string mean more than it
// shows: a startup file (--rcfile, --init-file) runs first, and -k (-o
// keyword) turns every NAME=value argument into an environment variable
// of its command. A word known only at run time where an option or the
// script may stand is returned as a dynamic script.
func shellScript(args []word) (script word, in shellInput, unsafe string) {
	cflag, sflag := false, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		v := a.val
		switch {
		case a.dyn:
			// An option (-c) or the script: either way, a script known only
			// at run time.
		case v == "--" || v == "-":
			if i+1 < len(args) {
				a = args[i+1]
				break
			}
			return word{}, shellStdin, unsafe
		case v == "--rcfile" || v == "--init-file":
			unsafe = "runs a startup file (--rcfile, --init-file) that cannot be checked"
			i++
			continue
		case v == "--version" || v == "--help":
			return word{}, shellNone, unsafe
		case strings.HasPrefix(v, "--"):
			continue
		case len(v) > 1 && (v[0] == '-' || v[0] == '+'):
			// A cluster (-ceo pipefail): every o and O takes the next word.
			for _, c := range v[1:] {
				switch {
				case c == 'o' || c == 'O':
					if i++; v[0] == '-' && c == 'o' && i < len(args) && (args[i].dyn || args[i].val == "keyword") {
						unsafe = keywordProblem
					}
				case v[0] == '-' && c == 'k':
					unsafe = keywordProblem
				case v[0] == '-' && c == 'c':
					cflag = true
				case v[0] == '-' && c == 's':
					sflag = true
				}
			}
			continue
		}
		switch {
		case cflag:
			return a, shellString, unsafe
		case sflag:
			return word{}, shellStdin, unsafe
		}
		return a, shellFile, unsafe
	}
	if cflag {
		return word{}, shellNone, unsafe
	}
	return word{}, shellStdin, unsafe
}

const keywordProblem = "sets -k (keyword): NAME=value arguments then set variables that decide what runs"

// setOptions checks set: -k (-o keyword) makes every NAME=value argument
// of a later command an environment variable of that command (set -k; git
// diff GIT_EXTERNAL_DIFF=x), which checkVar cannot see. Options end at
// "--" or the first operand (the positional parameters).
func (an *analyzer) setOptions(args []word, text string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		v := a.val
		if a.dyn {
			if a.lead || strings.HasPrefix(v, "-") {
				an.problem("%q: an option of set is only known at run time", text)
			}
			return
		}
		if v == "--" || v == "-" || len(v) < 2 || v[0] != '-' && v[0] != '+' {
			return
		}
		for _, c := range v[1:] {
			switch {
			case c == 'o':
				if i++; v[0] == '-' && i < len(args) && (args[i].dyn || args[i].val == "keyword") {
					an.problem("%q %s", text, keywordProblem)
				}
			case c == 'k' && v[0] == '-':
				an.problem("%q %s", text, keywordProblem)
			}
		}
	}
}

// shellDecides records what a shell runs: the commands of its -c string,
// parsed like the line. A shell that reads its commands from standard
// input (echo cmd | sh, sh <<EOF, sh -s) or from a file the line names
// only at run time (sh <(…), sh /dev/stdin, sh "$f") runs what no rule can
// see: the line cannot be analysed. A script file is a program like any
// other: it needs a rule. It reports whether the -c string decides.
func (an *analyzer) shellDecides(args []word, text string, depth int) bool {
	s, in, unsafe := shellScript(args)
	if unsafe != "" {
		an.problem("%q %s", text, unsafe)
	}
	switch in {
	case shellString:
		if s.dyn {
			an.problem("%q runs a script known only at run time", text)
		} else {
			an.script(s.val, depth+1)
		}
		return true
	case shellStdin:
		an.problem("%q reads commands from its standard input, which cannot be checked", text)
	case shellFile:
		if s.dyn || stdinPath(s.val) {
			an.problem("%q runs a script known only at run time", text)
		}
	}
	return false
}

// stdinPath reports whether a script path names a stream rather than a
// file: /dev/stdin, /dev/fd/N, /proc/self/fd/N.
func stdinPath(p string) bool {
	return strings.HasPrefix(p, "/dev/") || strings.HasPrefix(p, "/proc/") && strings.Contains(p, "/fd/")
}

// source (and .) runs a file in this shell. Like a script file, a file
// named on the line is a program that needs a rule; a file named only at
// run time, or a stream (. <(…), source /dev/stdin), runs commands the
// line does not show.
func (an *analyzer) source(args []word, text string) {
	if len(args) > 0 && !args[0].dyn && args[0].val == "--" {
		args = args[1:]
	}
	if len(args) > 0 && (args[0].dyn || stdinPath(args[0].val)) {
		an.problem("%q runs a script known only at run time", text)
	}
}

// runsShell reports whether sudo's or doas's options include -s or -i
// (--shell, --login): the command then goes to a shell as a string, or
// the shell reads commands from standard input. argShort and argLong list
// the options that take a value, as for skipOptions.
func runsShell(args []word, argShort, argLong string) bool {
	for i := 0; i < len(args); i++ {
		v := args[i].val
		switch {
		case args[i].dyn || v == "--" || v == "-" || !strings.HasPrefix(v, "-"):
			return false
		case strings.HasPrefix(v, "--"):
			if abbreviates(v, "--shell", "--login") {
				return true
			}
			if !strings.Contains(v, "=") && longOptionIn(argLong, v) {
				i++
			}
		default:
			for j := 1; j < len(v); j++ {
				if v[j] == 's' || v[j] == 'i' {
					return true
				}
				if fieldsContain(argShort, "-"+v[j:j+1]) {
					if j == len(v)-1 {
						i++
					}
					break
				}
			}
		}
	}
	return false
}

// findExec records the commands find runs for each match.
func (an *analyzer) findExec(args []word, depth int) {
	for i := 0; i < len(args); i++ {
		switch args[i].val {
		case "-exec", "-execdir", "-ok", "-okdir":
		default:
			continue
		}
		j := i + 1
		for j < len(args) && !(!args[j].dyn && (args[j].val == ";" || args[j].val == "+")) {
			j++
		}
		inner := make([]word, 0, j-i-1)
		for _, w := range args[i+1 : j] {
			if strings.Contains(w.val, "{}") {
				w.dyn = true
			}
			inner = append(inner, w)
		}
		if len(inner) == 0 {
			an.problem("find %s without a command", args[i].val)
		} else {
			an.simple(inner, "", depth+1)
		}
		i = j
	}
}

// varBuiltin checks the builtins that take names of variables: printf
// -v, read, mapfile, wait -p and getopts set them, unset and test -v name
// them. Bash evaluates a subscript in such a name as arithmetic, running
// the command substitutions in it (read 'a[$(rm -rf ~)]' runs rm), and a
// variable set this way decides what runs as surely as an assignment does
// (read GIT_EXTERNAL_DIFF; export GIT_EXTERNAL_DIFF; git diff).
func (an *analyzer) varBuiltin(name string, args []word, text string) {
	setOpt := func(opt byte) func(byte, word) {
		return func(c byte, v word) {
			if c == opt {
				an.varName(v, text, true)
			}
		}
	}
	var names []word // operands that name variables the builtin sets
	ok := true
	switch name {
	case "printf":
		_, ok = builtinOpts(args, "v", setOpt('v'))
	case "read":
		names, ok = builtinOpts(args, "adinNptu", setOpt('a'))
	case "mapfile", "readarray":
		names, ok = builtinOpts(args, "dnOsuCc", func(c byte, _ word) {
			if c == 'C' {
				an.problem("%q runs a callback for every line it reads (mapfile -C)", text)
			}
		})
	case "wait":
		_, ok = builtinOpts(args, "p", setOpt('p'))
	case "getopts":
		var rest []word
		if rest, ok = builtinOpts(args, "", setOpt(0)); len(rest) > 1 {
			names = rest[1:2]
		}
	case "unset":
		var rest []word
		rest, ok = builtinOpts(args, "", setOpt(0))
		for _, w := range rest {
			an.varName(w, text, false)
		}
	case "declare", "typeset", "local", "export", "readonly":
		// Written as a command (command export X=1, \declare …): read
		// like the declaration clause.
		an.declWords(name, args, text)
	case "test", "[":
		if name == "[" && len(args) > 0 && !args[len(args)-1].dyn && args[len(args)-1].val == "]" {
			args = args[:len(args)-1]
		}
		an.testArgs(args, text)
	}
	if !ok {
		an.problem("%q: an option is only known at run time (it may name a variable)", text)
	}
	for _, w := range names {
		an.varName(w, text, true)
	}
}

// varName checks a word a builtin takes as the name of a variable: only a
// plain identifier can be analysed. When the builtin sets the variable, it
// is also checked like an assignment.
func (an *analyzer) varName(w word, text string, sets bool) {
	switch {
	case w.dyn:
		an.problem("%q names a variable only known at run time", text)
	case !identRE.MatchString(w.val):
		an.problem("%q names variable %s, which is not a plain identifier (bash evaluates a subscript in it as code)", text, quoteWord(w.val))
	case sets:
		an.checkVar(w.val)
	}
}

func plainName(w word) bool { return !w.dyn && identRE.MatchString(w.val) }

// builtinOpts reads a builtin's options the way bash's getopt does:
// clusters of letters, where a letter in valued takes the rest of the word,
// or the next word, as its value; "--" or the first operand ends them. It
// calls f for each option and returns the operands, or false when a word
// known only at run time stands where an option may ("$a" may be -v).
func builtinOpts(args []word, valued string, f func(c byte, val word)) ([]word, bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a.dyn {
			return args[i:], !a.lead && !strings.HasPrefix(a.val, "-")
		}
		v := a.val
		switch {
		case v == "--":
			return args[i+1:], true
		case len(v) < 2 || v[0] != '-':
			return args[i:], true
		}
		for j := 1; j < len(v); j++ {
			c := v[j]
			if strings.IndexByte(valued, c) < 0 {
				f(c, word{})
				continue
			}
			val := litWord(v[j+1:])
			if j == len(v)-1 && i+1 < len(args) {
				i++
				val = args[i]
			}
			f(c, val)
			break
		}
	}
	return nil, true
}

// testArgs checks test's operands for -v, which tests a variable: a
// subscript in its name is evaluated as code (test -v 'a[$(rm -rf ~)]').
// The operand of a literal -v must be a plain identifier. A word known
// only at run time may be -v itself, so the word after it must not be
// dynamic or hold a subscript; and an unquoted expansion may split into
// "-v name" on its own.
func (an *analyzer) testArgs(args []word, text string) {
	for i, a := range args {
		switch {
		case a.split:
			an.problem("%q: an unquoted expansion in a test may become -v and a variable name (bash evaluates a subscript in it as code)", text)
			return
		case i+1 >= len(args):
		case !a.dyn && a.val == "-v":
			an.varName(args[i+1], text, false)
		case a.dyn && (a.lead || strings.HasPrefix(a.val, "-")):
			if next := args[i+1]; next.dyn || strings.ContainsRune(next.val, '[') {
				an.problem("%q: a word known only at run time may be -v, testing a variable whose name is not a plain identifier", text)
			}
		}
	}
}

// declWords reads the words of declare, typeset, local, export or
// readonly written as a plain command (the parser reads the usual form as
// a declaration clause, see assign and declOptions).
func (an *analyzer) declWords(name string, args []word, text string) {
	opts := true
	for _, w := range args {
		switch {
		case w.dyn:
			an.problem("a declaration in %q is only known at run time", text)
		case opts && w.val == "--":
			opts = false
		case opts && len(w.val) > 1 && (w.val[0] == '-' || w.val[0] == '+'):
			if w.val[0] == '-' && name != "export" && name != "readonly" && strings.ContainsAny(w.val[1:], "ni") {
				an.problem("%s %s: a nameref or integer variable makes later assignments impossible to follow", name, w.val)
			}
		case identRE.MatchString(w.val):
			an.checkVar(w.val)
		case isAssignment(w.val):
			an.checkVar(assignName(w.val))
		default:
			an.problem("declaration %s is not a plain variable name (bash evaluates a subscript in a name as code)", quoteWord(w.val))
		}
	}
}

// Git's options before the subcommand (git.c, handle_options; git does
// not accept abbreviations of them): those that take the next word as
// their value, those that take a value after "=", and those without one.
var (
	gitGlobalNext = map[string]bool{"-C": true, "-c": true, "--git-dir": true, "--work-tree": true, "--namespace": true,
		"--config-env": true, "--super-prefix": true, "--shallow-file": true, "--attr-source": true}
	gitGlobalEq = map[string]bool{"--git-dir": true, "--work-tree": true, "--namespace": true, "--config-env": true,
		"--super-prefix": true, "--attr-source": true, "--exec-path": true, "--list-cmds": true}
	gitGlobalFlags = map[string]bool{"-p": true, "--paginate": true, "-P": true, "--no-pager": true, "--bare": true,
		"--no-replace-objects": true, "--no-lazy-fetch": true, "--literal-pathspecs": true, "--no-literal-pathspecs": true,
		"--glob-pathspecs": true, "--noglob-pathspecs": true, "--icase-pathspecs": true, "--no-optional-locks": true,
		"--no-advice": true, "--exec-path": true, "--html-path": true, "--man-path": true, "--info-path": true,
		"--list-builtins": true, "--list-parseopt-builtins": true}
)

// gitCommand is a git command line read up to its subcommand.
type gitCommand struct {
	// sub is the index of the subcommand in the arguments (their length
	// when there is none); name replaces it when an option stands for a
	// subcommand (git --help push runs git help push).
	sub  int
	name string
	// dyn: a word known only at run time stands where an option may.
	dyn bool
	// unknown: an option git does not know; it may take the next word as
	// its value, so the subcommand is not known.
	unknown bool
	// config: -c or --config-env, which can name programs to run.
	config bool
	// redefines: the configuration defines an alias or includes a file,
	// which may turn the subcommand into any other (-c alias.p=push p).
	redefines bool
	// execPath: --exec-path, which runs git's commands from elsewhere.
	execPath bool
}

func readGitGlobals(args []word) gitCommand {
	g := gitCommand{sub: len(args)}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a.dyn || !strings.HasPrefix(a.val, "-") {
			g.sub, g.dyn = i, a.dyn
			return g
		}
		opt, eqVal, eq := strings.Cut(a.val, "=")
		val := litWord(eqVal)
		switch {
		case a.val == "--help" || a.val == "-h":
			g.sub, g.name = i, "help"
			return g
		case a.val == "--version" || a.val == "-v":
			g.sub, g.name = i, "version"
			return g
		case eq && gitGlobalEq[opt]:
		case !eq && gitGlobalNext[opt]:
			val = word{}
			if i+1 < len(args) {
				i++
				val = args[i]
			}
		case !eq && gitGlobalFlags[opt]:
		default:
			g.unknown = true
		}
		switch opt {
		case "-c", "--config-env":
			g.config = true
			key, _, _ := strings.Cut(strings.ToLower(val.val), "=")
			if val.dyn || strings.HasPrefix(key, "alias.") || strings.HasPrefix(key, "include.") || strings.HasPrefix(key, "includeif.") {
				g.redefines = true
			}
		case "--exec-path":
			g.execPath = true
		}
	}
	return g
}

// gitViews returns the readings of a git command without its global
// options (git -C dir push, git -c k=v push), so deny and ask rules on
// "git push" catch those spellings too. After an option git does not
// know, the subcommand is not known (the option may take the next word as
// its value): a reading with an unknown subcommand makes deny and ask
// rules on git ask. Configuration that defines aliases or includes files
// can turn any subcommand into another, which no reading can follow.
func (an *analyzer) gitViews(v view, text string) []view {
	args := v.words[1:]
	g := readGitGlobals(args)
	if g.redefines {
		an.problem("%q sets git configuration that can redefine its subcommands (alias.*, include.*)", text)
	}
	var out []view
	if g.sub > 0 || g.name != "" {
		rest := args[g.sub:]
		words := make([]word, 0, 2+len(rest))
		words = append(words, v.words[0])
		if g.name != "" {
			words = append(words, word{val: g.name})
			rest = rest[1:]
		}
		out = append(out, view{words: append(words, rest...), open: v.open})
	}
	if g.unknown {
		out = append(out, view{words: []word{v.words[0], {dyn: true}}, open: true})
	}
	return out
}

// redirect records files a redirection writes or reads.
func (an *analyzer) redirect(r *syntax.Redirect, src string) {
	write, read := false, false
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		return
	case syntax.RdrIn:
		read = true
	case syntax.RdrInOut:
		read, write = true, true
	case syntax.DplIn, syntax.DplOut:
		w := an.word(r.Word)
		if !w.dyn && (w.val == "-" || isDigits(w.val)) {
			return // fd duplication: >&2, 2>&1, >&-
		}
		read, write = r.Op == syntax.DplIn, r.Op == syntax.DplOut
	default:
		write = true
	}
	if len(r.Word.Parts) == 1 {
		if _, ok := r.Word.Parts[0].(*syntax.ProcSubst); ok {
			return // > >(cmd): a pipe; cmd itself is analysed
		}
	}
	w := an.word(r.Word)
	text := source(src, r)
	p, ok := an.pathWord(w)
	if ok && safeDevice(p) {
		return
	}
	t := target{path: p, dyn: !ok, text: text}
	if write {
		if t.dyn {
			an.problem("%q writes to a path known only at run time", text)
			an.a.dynWrite = true
		} else {
			an.a.writes = append(an.a.writes, t)
		}
	}
	if read {
		an.a.reads = append(an.a.reads, t)
	}
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// safeDevice lists targets that are not files anyone cares about.
func safeDevice(p string) bool {
	switch p {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty", "/dev/zero":
		return true
	}
	return strings.HasPrefix(p, "/dev/fd/")
}

// pathWord is the path a redirection target or a path argument names,
// with a leading unquoted ~ expanded the way the shell does. It reports
// false when the path is only known at run time: a dynamic word, or a
// tilde that bash looks up when the line runs (~user is that user's home,
// ~+ and ~- are $PWD and $OLDPWD), or ~ when the home directory is not
// known. Read as a relative path, ~root/.bashrc would pass for a file in
// the project.
func (an *analyzer) pathWord(w word) (string, bool) {
	switch {
	case w.dyn:
		return w.val, false
	case !w.tilde:
		return w.val, true
	case w.home && an.home != "":
		return an.home + w.val[1:], true
	}
	return w.val, false
}

// dangerousVars decide which code a command runs: setting them turns an
// allowed command into an arbitrary one (LD_PRELOAD=x.so git status).
var dangerousVars = map[string]bool{
	"PATH": true, "IFS": true, "BASH_ENV": true, "ENV": true, "SHELLOPTS": true, "BASHOPTS": true,
	"PROMPT_COMMAND": true, "PS4": true, "HOME": true, "CDPATH": true, "EDITOR": true, "VISUAL": true,
	"PAGER": true, "MANPAGER": true, "LESSOPEN": true, "LESSCLOSE": true, "BROWSER": true,
	"NODE_OPTIONS": true, "PYTHONSTARTUP": true, "PYTHONPATH": true, "PERL5OPT": true, "PERL5LIB": true,
	"RUBYOPT": true, "RUBYLIB": true, "JAVA_TOOL_OPTIONS": true, "_JAVA_OPTIONS": true,
	"SSH_ASKPASS": true, "SUDO_ASKPASS": true, "GIT_ASKPASS": true,
	// Build tools and interpreters that take code or programs from the
	// environment: make --eval, go -toolexec, a C compiler for cgo, tar
	// --to-command, rustc wrappers, an interpreter's home, $SHELL for the
	// programs that spawn one, glibc's loadable converters, OpenSSL engines,
	// kubectl exec plugins, package indexes to install from.
	"MAKEFLAGS": true, "MFLAGS": true, "GNUMAKEFLAGS": true, "MAKEFILES": true,
	"GOFLAGS": true, "GOENV": true, "CC": true, "CXX": true,
	"CGO_CFLAGS": true, "CGO_CPPFLAGS": true, "CGO_CXXFLAGS": true, "CGO_FFLAGS": true, "CGO_LDFLAGS": true,
	"TAR_OPTIONS": true, "RUSTC": true, "RUSTC_WRAPPER": true, "RUSTC_WORKSPACE_WRAPPER": true, "RUSTFLAGS": true,
	"CARGO_BUILD_RUSTC": true, "CARGO_BUILD_RUSTC_WRAPPER": true, "PYTHONHOME": true, "PYTHONWARNINGS": true,
	"SHELL": true, "GCONV_PATH": true, "LOCPATH": true, "OPENSSL_CONF": true, "KUBECONFIG": true,
	"PIP_INDEX_URL": true, "PIP_EXTRA_INDEX_URL": true,
}

var dangerousPrefixes = []string{"LD_", "DYLD_", "GIT_", "BASH_FUNC_", "npm_config_", "NPM_CONFIG_"}

func (an *analyzer) checkVar(name string) {
	if dangerousVars[name] {
		an.problem("setting %s changes which programs run", name)
		return
	}
	for _, p := range dangerousPrefixes {
		if strings.HasPrefix(name, p) {
			an.problem("setting %s changes which programs run", name)
			return
		}
	}
}

func (an *analyzer) assign(a *syntax.Assign) {
	if a.Index != nil {
		an.arith(a.Index)
	}
	if a.Name != nil {
		// Also "export NAME" and "declare NAME" without a value: the
		// value may have been set by read or printf -v.
		an.checkVar(a.Name.Value)
		return
	}
	if a.Naked && a.Value != nil { // export "$X", declare "A=1", declare -n
		w := an.word(a.Value)
		switch {
		case w.dyn:
			an.problem("a declaration is only known at run time")
		case strings.HasPrefix(w.val, "-") || strings.HasPrefix(w.val, "+"):
			// An option: declOptions reads it.
		case identRE.MatchString(w.val):
			an.checkVar(w.val)
		case isAssignment(w.val):
			an.checkVar(assignName(w.val))
		default:
			// declare 'a[$(rm -rf ~)]=1' evaluates the subscript.
			an.problem("declaration %s is not a plain variable name (bash evaluates a subscript in a name as code)", quoteWord(w.val))
		}
	}
}

// declOptions reads the options of declare, typeset and local. A nameref
// (-n) makes assigning one name set another (declare -n r=PATH; r=/tmp),
// and the integer attribute (-i) makes every later assignment arithmetic,
// whose subscripts bash evaluates as code: neither can be followed by
// reading the line.
func (an *analyzer) declOptions(d *syntax.DeclClause) {
	switch d.Variant.Value {
	case "declare", "typeset", "local":
	default:
		return
	}
	for _, a := range d.Args {
		if !a.Naked || a.Name != nil || a.Value == nil {
			continue
		}
		w := an.word(a.Value)
		if w.dyn || w.val == "--" || !strings.HasPrefix(w.val, "-") {
			continue // assign reports dynamic words and names
		}
		if strings.ContainsAny(w.val[1:], "ni") {
			an.problem("%s %s: a nameref or integer variable makes later assignments impossible to follow", d.Variant.Value, w.val)
		}
	}
}

var numberRE = regexp.MustCompile(`^([0-9]+|0[xX][0-9a-fA-F]+|[0-9]+#[0-9a-zA-Z@_]+)$`)

// arith flags arithmetic on anything but numbers: bash evaluates the value
// of a variable used in arithmetic as an expression, and an array subscript
// in that value can run a command substitution (x='a[$(rm -rf ~)]'; ((x))).
func (an *analyzer) arith(x syntax.ArithmExpr) {
	if x == nil {
		return
	}
	bad := false
	syntax.Walk(x, func(n syntax.Node) bool {
		if w, ok := n.(*syntax.Word); ok {
			lit := w.Lit()
			if lit == "" || !numberRE.MatchString(lit) {
				bad = true
			}
			return false
		}
		return !bad
	})
	if bad {
		an.problem("arithmetic on values known only at run time (bash evaluates them as code)")
	}
}

// test flags [[ a -eq b ]], whose operands are arithmetic, and
// [[ -v name ]] unless name is a plain identifier (a subscript in it is
// arithmetic too).
func (an *analyzer) test(x syntax.TestExpr) {
	syntax.Walk(x, func(n syntax.Node) bool {
		if u, ok := n.(*syntax.UnaryTest); ok && u.Op == syntax.TsVarSet {
			if w, ok := u.X.(*syntax.Word); !ok || !plainName(an.word(w)) {
				an.problem("[[ -v ]] tests a variable whose name is not a plain identifier (bash evaluates a subscript in it as code)")
			}
		}
		if b, ok := n.(*syntax.BinaryTest); ok {
			switch b.Op {
			case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
				for _, side := range []syntax.TestExpr{b.X, b.Y} {
					if w, ok := side.(*syntax.Word); ok {
						if lit := w.Lit(); lit == "" || !numberRE.MatchString(lit) {
							an.problem("arithmetic on values known only at run time (bash evaluates them as code)")
						}
					}
				}
			}
		}
		return true
	})
}

// joinWords renders words as a command line (for messages and rules).
func joinWords(ws []word) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = quoteWord(w.val)
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

// ruleWords splits a Bash rule's command into words with the shell parser.
// It reports whether the last word is an unquoted * (the "ls *" prefix
// form); any other run-time expansion in a rule is an error, since a rule
// must mean one thing.
func ruleWords(spec string) ([]string, bool, error) {
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
	an := &analyzer{a: &analysis{}}
	out := make([]string, 0, len(call.Args))
	star := false
	for i, w := range call.Args {
		if i == len(call.Args)-1 && w.Lit() == "*" {
			star = true
			break
		}
		v := an.word(w)
		if v.dyn {
			return nil, false, fmt.Errorf("%q expands at run time; wildcards are only supported as a trailing :* (quote the word to match it literally)", source(spec, w))
		}
		out = append(out, v.val)
	}
	return out, star, nil
}
