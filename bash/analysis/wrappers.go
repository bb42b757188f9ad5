package analysis

import (
	"regexp"
	"strings"
)

// wrapper is the grammar of a program that runs another program named in
// its arguments (sudo rm x, timeout 5 rm x): how to find that program's
// words, so rules see the command that really runs.
type wrapper struct {
	// short and long list the options that take a value, space separated
	// with their dashes, as getopt reads them (clusters, abbreviated long
	// options, values attached or in the next word).
	short, long string
	// operands is the number of words between the options and the
	// command (timeout's duration).
	operands int
	// raw: no options are read; the command is the first argument
	// (nohup, busybox).
	raw bool
	// none lists options with which the program runs no command (ionice
	// -p, command -v): its arguments are then its own.
	none []string
	// privileged: the command runs with other privileges, so an allow
	// rule must allow the wrapper itself (allowing rm does not allow sudo
	// rm).
	privileged bool
	// shellShort and shellLong are the options that make it hand the
	// command to a shell as a string, or run a shell reading standard
	// input (sudo -s, -i): nothing on the line shows what that shell runs.
	shellShort string
	shellLong  []string
	// bare: without a command it changes nothing outside the shell (exec
	// 3>f only redirects).
	bare bool
	// read replaces the getopt reading for programs with a grammar of
	// their own (env's assignments, time -o, xargs' input). open reports
	// that unknown words follow the command (xargs appends its input).
	read func(an *analyzer, args []Word, text string) (next []Word, ok, open bool)
}

// wrappers are the programs the analysis unwraps, by base name. Options
// are those of the GNU, util-linux, sudo and bash versions.
var wrappers map[string]wrapper

func init() {
	sudo := wrapper{
		short:      "-u -g -C -D -h -p -r -t -T -U -R",
		long:       "--user --group --close-from --chdir --host --prompt --role --type --command-timeout --other-user --chroot",
		privileged: true, shellShort: "si", shellLong: []string{"--shell", "--login"},
	}
	wrappers = map[string]wrapper{
		"sudo":    sudo,
		"doas":    sudo,
		"nohup":   {raw: true},
		"builtin": {raw: true},
		"busybox": {raw: true},
		"exec":    {short: "-a", bare: true},
		"timeout": {short: "-s -k", long: "--signal --kill-after", operands: 1},
		"nice":    {short: "-n", long: "--adjustment"},
		"stdbuf":  {short: "-i -o -e", long: "--input --output --error"},
		"setsid":  {},
		"ionice":  {short: "-c -n", long: "--class --classdata", none: []string{"-p", "-P", "-u", "--pid", "--pgid", "--uid"}},
		"command": {none: []string{"-v", "-V"}},
		"env": {read: func(an *analyzer, args []Word, text string) ([]Word, bool, bool) {
			next, ok := an.unwrapEnv(args, text)
			return next, ok, false
		}},
		"time": {read: func(an *analyzer, args []Word, text string) ([]Word, bool, bool) {
			next, ok := an.unwrapTime(args, text)
			return next, ok, false
		}},
		"xargs": {read: (*analyzer).unwrapXargs},
	}
}

// unwrap returns the command w runs with args, or false when it runs none
// (or the analysis cannot tell which: a problem says so).
func (w wrapper) unwrap(an *analyzer, args []Word, text string) (next []Word, ok, open bool) {
	switch {
	case w.read != nil:
		return w.read(an, args, text)
	case w.raw:
		return args, len(args) > 0, false
	case len(w.none) > 0 && hasOption(args, w.none...):
		return nil, false, false
	}
	if w.shellShort != "" && runsShell(args, w.short, w.long, w.shellShort, w.shellLong) {
		an.problem("%q runs a shell (sudo -s or -i) on a command line that cannot be checked", text)
	}
	next, ok = an.skipOptions(args, text, w.short, w.long)
	if ok && w.operands > 0 {
		next, ok = next[min(w.operands, len(next)):], len(next) > w.operands
	}
	return next, ok, false
}

// skipOptions skips a wrapper's options: argShort and argLong list the
// options that take a value (space separated). It returns the wrapped
// command, or false when there is none. An option whose value is only known
// at run time makes the line unanalysable.
func (an *analyzer) skipOptions(args []Word, text, argShort, argLong string) ([]Word, bool) {
	i := 0
	for i < len(args) {
		a := args[i]
		if a.Dynamic {
			an.problem("an option in %q is only known at run time", text)
			return nil, false
		}
		v := a.Value
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

func hasOption(args []Word, opts ...string) bool {
	for _, a := range args {
		for _, o := range opts {
			if a.Value == o || strings.HasPrefix(a.Value, o+"=") {
				return true
			}
		}
	}
	return false
}

// unwrapEnv reads env's options and assignments. A variable that decides
// which code runs (PATH, LD_PRELOAD, …) makes the line unanalysable.
func (an *analyzer) unwrapEnv(args []Word, text string) ([]Word, bool) {
	i := 0
	for i < len(args) {
		a := args[i]
		if a.Dynamic {
			an.problem("an argument of env in %q is only known at run time", text)
			return nil, false
		}
		v := a.Value
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
			an.a.Chdir = true
			i += 2
		case strings.HasPrefix(v, "--chdir=") || strings.HasPrefix(v, "-C"):
			an.a.Chdir = true
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
func (an *analyzer) unwrapTime(args []Word, text string) ([]Word, bool) {
	i := 0
	for i < len(args) {
		a := args[i]
		if a.Dynamic {
			an.problem("an option in %q is only known at run time", text)
			return nil, false
		}
		v := a.Value
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

func (an *analyzer) output(w Word, text string) {
	p, ok := an.pathWord(w)
	if !ok {
		an.problem("%q writes to a path known only at run time", text)
		an.a.DynamicWrite = true
		return
	}
	an.a.Writes = append(an.a.Writes, File{Path: p, Text: text})
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
func (an *analyzer) unwrapXargs(args []Word, text string) ([]Word, bool, bool) {
	// Short options that take a value: the rest of the word, or the next
	// word. -i, -e and -l take only the rest of the word.
	const valued = "aEILnPsd"
	replace := ""
	i := 0
loop:
	for i < len(args) {
		a := args[i]
		if a.Dynamic {
			an.problem("an option in %q is only known at run time", text)
			return nil, false, false
		}
		v := a.Value
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
						rest = args[i].Value
						if c == 'I' && args[i].Dynamic {
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
		return []Word{{Value: "echo"}}, true, true
	}
	if replace == "" {
		return inner, true, true
	}
	out := make([]Word, len(inner))
	for j, w := range inner {
		out[j] = w
		if j > 0 && strings.Contains(w.Value, replace) {
			out[j].Dynamic = true
		}
	}
	if strings.Contains(out[0].Value, replace) {
		out[0].Dynamic = true
	}
	return out, true, false
}

// runsShell reports whether a wrapper's options include one that hands
// the command to a shell (sudo -s or -i, --shell, --login): the command
// then goes to a shell as a string, or the shell reads commands from
// standard input. argShort and argLong list the options that take a
// value, as for skipOptions; shellShort and shellLong the shell options.
func runsShell(args []Word, argShort, argLong, shellShort string, shellLong []string) bool {
	for i := 0; i < len(args); i++ {
		v := args[i].Value
		switch {
		case args[i].Dynamic || v == "--" || v == "-" || !strings.HasPrefix(v, "-"):
			return false
		case strings.HasPrefix(v, "--"):
			if abbreviates(v, shellLong...) {
				return true
			}
			if !strings.Contains(v, "=") && longOptionIn(argLong, v) {
				i++
			}
		default:
			for j := 1; j < len(v); j++ {
				if strings.IndexByte(shellShort, v[j]) >= 0 {
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
