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
			return word{val: l.Value}
		}
	}
	var b strings.Builder
	dyn := false
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			s, glob := unescapeLit(p.Value)
			dyn = dyn || glob
			b.WriteString(s)
		case *syntax.SglQuoted:
			// $'…' decodes escapes at run time; without a backslash it is
			// plain text.
			dyn = dyn || (p.Dollar && strings.ContainsRune(p.Value, '\\'))
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					b.WriteString(unescapeDouble(l.Value))
				} else {
					dyn = true
				}
			}
		default: // parameter, command, arithmetic, process substitution, extglob
			dyn = true
		}
	}
	return word{val: b.String(), dyn: dyn}
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
// but still obey deny and ask rules.
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
			next, ok = an.skipOptions(args, cmd.text, "-u -g -C -D -h -p -r -t -T -U -R", "--user --group --close-from --chdir --host --prompt --role --type --command-timeout --other-user --chroot")
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
		case "eval":
			an.eval(args, cmd.text, depth)
			innerDecides = true
		case "trap":
			an.trap(args, cmd.text, depth)
			neutral = true
		case "find":
			an.findExec(args, depth)
		case "git":
			if v, ok := stripGitGlobals(cur); ok {
				cmd.views = append(cmd.views, v)
			}
		default:
			if shells[name] {
				if s, found := an.shellScript(args, cmd.text); found {
					if !s.dyn {
						an.script(s.val, depth+1)
					}
					innerDecides = true
				}
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
			if !strings.Contains(v, "=") && fieldsContain(argLong, v) {
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
			an.checkVar(v[:strings.IndexByte(v, '=')])
			i++
		default:
			return args[i:], true
		}
	}
	return nil, false
}

var assignRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

func isAssignment(s string) bool { return assignRE.MatchString(s) }

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
		case v == "-o" || v == "--output":
			if i+1 < len(args) {
				an.output(args[i+1], text)
			}
			i += 2
		case strings.HasPrefix(v, "--output="):
			an.output(word{val: strings.TrimPrefix(v, "--output=")}, text)
			i++
		case v == "-f" || v == "--format":
			i += 2
		case strings.HasPrefix(v, "-") && v != "-":
			i++
		default:
			return args[i:], true
		}
	}
	return nil, false
}

func (an *analyzer) output(w word, text string) {
	if w.dyn {
		an.problem("%q writes to a path known only at run time", text)
		return
	}
	an.a.writes = append(an.a.writes, target{path: an.expandTilde(w.val), text: text})
}

// unwrapXargs reads xargs' options. The command it runs gets the input
// appended (open view) or substituted for the replace string (dynamic
// words). With no command, xargs runs echo.
func (an *analyzer) unwrapXargs(args []word, text string) ([]word, bool, bool) {
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
		case v == "-I":
			if i+1 < len(args) {
				replace = args[i+1].val
			}
			i += 2
		case strings.HasPrefix(v, "-I"):
			replace = v[2:]
			i++
		case v == "-i" || v == "--replace":
			replace = "{}"
			i++
		case strings.HasPrefix(v, "-i"):
			replace = v[2:]
			i++
		case strings.HasPrefix(v, "--replace="):
			replace = strings.TrimPrefix(v, "--replace=")
			i++
		case len(v) == 2 && strings.ContainsRune("LnPsdEa", rune(v[1])) && v[0] == '-':
			i += 2
		case strings.HasPrefix(v, "-"):
			i++
		default:
			break loop
		}
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

// eval runs its arguments joined by spaces as a command line.
func (an *analyzer) eval(args []word, text string, depth int) {
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

// trap's first argument is a command line run later.
func (an *analyzer) trap(args []word, text string, depth int) {
	if len(args) < 2 || strings.HasPrefix(args[0].val, "-") && !args[0].dyn {
		return
	}
	if args[0].dyn {
		an.problem("%q installs a handler known only at run time", text)
		return
	}
	an.script(args[0].val, depth+1)
}

// shellScript finds the -c string of a shell invocation.
func (an *analyzer) shellScript(args []word, text string) (word, bool) {
	cflag := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a.dyn {
			if cflag {
				an.problem("%q runs a script known only at run time", text)
				return a, true
			}
			return word{}, false
		}
		v := a.val
		switch {
		case v == "--":
			continue
		case v == "-o" || v == "+o" || v == "-O" || v == "+O" || v == "--rcfile" || v == "--init-file":
			i++
		case strings.HasPrefix(v, "--"):
		case len(v) > 1 && (v[0] == '-' || v[0] == '+'):
			if strings.ContainsRune(v[1:], 'c') && v[0] == '-' {
				cflag = true
			}
		default:
			if cflag {
				return a, true
			}
			return word{}, false
		}
	}
	return word{}, false
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

// stripGitGlobals returns the reading of a git command without its global
// options (git -C dir push, git -c k=v push), so deny and ask rules on
// "git push" catch those spellings too.
func stripGitGlobals(v view) (view, bool) {
	args := v.words[1:]
	i := 0
loop:
	for i < len(args) {
		a := args[i].val
		switch {
		case args[i].dyn:
			break loop
		case a == "-C" || a == "-c" || a == "--exec-path" || a == "--git-dir" || a == "--work-tree" || a == "--namespace" || a == "--config-env":
			i += 2
		case strings.HasPrefix(a, "--") && strings.Contains(a, "="):
			i++
		case a == "-p" || a == "-P" || a == "--paginate" || a == "--no-pager" || a == "--bare" || a == "--no-replace-objects" ||
			a == "--literal-pathspecs" || a == "--glob-pathspecs" || a == "--noglob-pathspecs" || a == "--icase-pathspecs" ||
			a == "--no-optional-locks" || a == "--no-advice":
			i++
		default:
			break loop
		}
	}
	if i == 0 || i > len(args) {
		return view{}, false
	}
	out := append([]word{v.words[0]}, args[i:]...)
	return view{words: out, open: v.open}, true
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
	t := target{path: w.val, dyn: w.dyn, text: text}
	if !w.dyn {
		t.path = an.tildeWord(r.Word, w.val)
		if safeDevice(t.path) {
			return
		}
	}
	if write {
		if t.dyn {
			an.problem("%q writes to a path known only at run time", text)
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

// tildeWord expands a leading unquoted ~ the way the shell does.
func (an *analyzer) tildeWord(w *syntax.Word, val string) string {
	if l, ok := w.Parts[0].(*syntax.Lit); ok && strings.HasPrefix(l.Value, "~") {
		return an.expandTilde(val)
	}
	return val
}

func (an *analyzer) expandTilde(val string) string {
	if an.home != "" && (val == "~" || strings.HasPrefix(val, "~/")) {
		return an.home + val[1:]
	}
	return val
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
		if !a.Naked {
			an.checkVar(a.Name.Value)
		}
		return
	}
	if a.Naked && a.Value != nil { // export "$X", declare "A=1"
		w := an.word(a.Value)
		switch {
		case w.dyn:
			an.problem("a declaration is only known at run time")
		case isAssignment(w.val):
			an.checkVar(w.val[:strings.IndexByte(w.val, '=')])
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

// test flags [[ a -eq b ]], whose operands are arithmetic.
func (an *analyzer) test(x syntax.TestExpr) {
	syntax.Walk(x, func(n syntax.Node) bool {
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
