package analysis

import (
	"regexp"
	"strings"
	"sync"
)

// wrapper is the grammar of a program that runs another program named in
// its arguments (sudo rm x, timeout 5 rm x, su -c 'rm x'): how to find
// that program, so rules see the command that really runs.
type wrapper struct {
	// short and long list the options that take a value, space separated
	// with their dashes, as getopt reads them (clusters, abbreviated long
	// options, values attached or in the next word). Options end at the
	// first operand.
	short, long string
	// operands is the number of words between the options and the
	// command (timeout's duration, chroot's new root).
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
	// shellWithout: without a command it runs an interactive shell, which
	// reads its commands from standard input (unshare, chroot, su).
	shellWithout bool
	// bare: without a command it changes nothing outside the shell (exec
	// 3>f only redirects).
	bare bool
	// read replaces the getopt reading for programs with a grammar of
	// their own (env's assignments, time -o, xargs' input, su -c).
	read func(an *analyzer, args []Word, text string, depth int) unwrapped
}

// unwrapped is what a wrapper runs.
type unwrapped struct {
	// next is the command it runs, when ok.
	next []Word
	ok   bool
	// open: unknown words follow the command (xargs appends its input).
	open bool
	// viaShell: it hands a string to a shell (su -c, watch, script -c),
	// whose commands the analysis has read as commands of the line.
	viaShell bool
}

// wrappers are the programs the analysis unwraps, by base name. Options
// are those of the GNU coreutils, util-linux, sudo, procps and bash
// versions. A program that runs another one and is missing here is still
// not a way around a deny rule: see [analyzer.unknownProgram].
var wrappers map[string]wrapper

// wrappersOnce fills wrappers when a command is first analysed (a Once for
// the reason programsOnce is).
var wrappersOnce sync.Once

func initWrappers() {
	sudo := wrapper{
		short:      "-u -g -C -D -h -p -r -t -T -U -R",
		long:       "--user --group --close-from --chdir --host --prompt --role --type --command-timeout --other-user --chroot",
		privileged: true, shellShort: "si", shellLong: []string{"--shell", "--login"},
	}
	su := wrapper{privileged: true, read: (*analyzer).unwrapSu}
	wrappers = map[string]wrapper{
		"sudo": sudo,
		"doas": {short: "-u -C", privileged: true, shellShort: "s"},
		"run0": {short: "-u -g -D", long: "--user --group --chdir --setenv --property --unit --slice --nice --description --background --machine",
			privileged: true, shellWithout: true},
		"pkexec":    {long: "--user", privileged: true, shellWithout: true},
		"nohup":     {raw: true},
		"builtin":   {raw: true},
		"busybox":   {raw: true},
		"toybox":    {raw: true},
		"catchsegv": {raw: true},
		"exec":      {short: "-a", bare: true},
		"timeout":   {short: "-s -k", long: "--signal --kill-after", operands: 1},
		"nice":      {short: "-n", long: "--adjustment"},
		"stdbuf":    {short: "-i -o -e", long: "--input --output --error"},
		"setsid":    {},
		"ionice":    {short: "-c -n", long: "--class --classdata", none: []string{"-p", "-P", "-u", "--pid", "--pgid", "--uid"}},
		"command":   {none: []string{"-v", "-V"}},
		"taskset":   {none: []string{"-p", "--pid"}, operands: 1},
		"chrt":      {short: "-T -P -D", long: "--sched-runtime --sched-period --sched-deadline", none: []string{"-p", "--pid", "-m", "--max"}, operands: 1},
		"prlimit":   {short: "-p", long: "--pid", none: []string{"-p", "--pid"}},
		"setpriv": {long: "--ruid --euid --rgid --egid --reuid --regid --groups --inh-caps --ambient-caps --bounding-set " +
			"--securebits --pdeathsig --selinux-label --apparmor-profile --landlock-access --landlock-rule --seccomp-filter",
			privileged: true},
		"unshare": {short: "-R -w -S -G -l", long: "--setuid --setgid --root --wd --propagation --setgroups --map-user --map-users " +
			"--map-group --map-groups --monotonic --boottime --load-interp", privileged: true, shellWithout: true},
		"nsenter": {short: "-t -S -G -r -w -Z", long: "--target --setuid --setgid --root --wd --env --user-parent --join-cgroup",
			privileged: true, shellWithout: true},
		"chroot":           {long: "--groups --userspec", operands: 1, privileged: true, shellWithout: true},
		"fakeroot":         {short: "-l -s -i -b", long: "--lib --faked --save-file --load-file --fd-base", shellWithout: true},
		"firejail":         {shellWithout: true},
		"valgrind":         {},
		"ssh-agent":        {short: "-a -E -O -P -t"},
		"dbus-run-session": {long: "--config-file --dbus-daemon"},
		"strace":           {read: (*analyzer).unwrapTracer},
		"ltrace":           {read: (*analyzer).unwrapTracer},
		"su":               su,
		"runuser":          su,
		"sg":               {privileged: true, read: (*analyzer).unwrapSg},
		"flock":            {read: (*analyzer).unwrapFlock},
		"script":           {read: (*analyzer).unwrapScript},
		"watch":            {read: (*analyzer).unwrapWatch},
		"entr":             {read: (*analyzer).unwrapEntr},
		"gdb":              {read: (*analyzer).unwrapGdb},
		"env": {read: func(an *analyzer, args []Word, text string, _ int) unwrapped {
			next, ok := an.unwrapEnv(args, text)
			return unwrapped{next: next, ok: ok}
		}},
		"time": {read: func(an *analyzer, args []Word, text string, _ int) unwrapped {
			next, ok := an.unwrapTime(args, text)
			return unwrapped{next: next, ok: ok}
		}},
		"xargs": {read: func(an *analyzer, args []Word, text string, _ int) unwrapped {
			next, ok, open := an.unwrapXargs(args, text)
			return unwrapped{next: next, ok: ok, open: open}
		}},
	}
}

// unwrap returns the command w runs with args, or ok false when it runs
// none (or the analysis cannot tell which: a problem says so).
func (w wrapper) unwrap(an *analyzer, args []Word, text string, depth int) unwrapped {
	switch {
	case len(w.none) > 0 && hasOption(args, w.none...):
		return unwrapped{}
	case w.read != nil:
		return w.read(an, args, text, depth)
	case w.raw:
		if len(args) > 0 && !args[0].Dynamic && args[0].Value == "--" {
			args = args[1:]
		}
		return unwrapped{next: args, ok: len(args) > 0}
	}
	if w.shellShort != "" && runsShell(args, w.short, w.long, w.shellShort, w.shellLong) {
		an.problem("%q runs a shell (sudo -s or -i) on a command line that cannot be checked", text)
	}
	next, ok := an.skipOptions(args, text, w.short, w.long)
	if ok && w.operands > 0 {
		next, ok = next[min(w.operands, len(next)):], len(next) > w.operands
	}
	if !ok && w.shellWithout {
		an.problem("%q runs a shell reading commands from its standard input, which cannot be checked", text)
	}
	return unwrapped{next: next, ok: ok}
}

// readOptions reads a wrapper's arguments by g; a word known only at run
// time where an option may stand makes the line unanalysable (false).
func (an *analyzer) readOptions(g grammar, args []Word, text string) (parsedArgs, bool) {
	p := g.read(args)
	if p.dynamic {
		an.problem("an option in %q is only known at run time", text)
		return p, false
	}
	return p, true
}

// viaShell reads a command string a wrapper hands to a shell (su -c,
// watch, script -c) as commands of the line.
func (an *analyzer) viaShell(s Word, text string, depth int) unwrapped {
	if s.Dynamic {
		an.problem("%q runs a command line known only at run time", text)
	} else {
		an.script(s.Value, depth+1)
	}
	return unwrapped{viaShell: true}
}

// unwrapSu reads su and runuser: -c (--command, --session-command) hands
// a string to the user's shell; runuser -u USER runs the command after
// it; -s names the shell, a program in its own right. Without a command
// either starts a shell that reads standard input.
func (an *analyzer) unwrapSu(args []Word, text string, depth int) unwrapped {
	g := grammar{valued: "cCsgGwu", long: []string{"--command", "--session-command", "--shell", "--group", "--supp-group", "--whitelist-environment", "--user"}}
	g.stop = true
	if p := g.read(args); p.has("-u", "--user") && !p.dynamic {
		// runuser -u USER [--] COMMAND…: the command's own options are its own.
		return unwrapped{next: p.operands, ok: len(p.operands) > 0}
	}
	g.stop = false // su permutes: su root -c 'cmd'
	p, ok := an.readOptions(g, args, text)
	if !ok {
		return unwrapped{}
	}
	for _, sh := range p.values("-s", "--shell") {
		an.simple([]Word{sh}, "", depth+1)
	}
	if cmds := p.values("-c", "--command", "--session-command"); len(cmds) > 0 {
		return an.viaShell(cmds[len(cmds)-1], text, depth)
	}
	an.problem("%q runs a shell reading commands from its standard input, which cannot be checked", text)
	return unwrapped{}
}

// unwrapSg reads sg [-] GROUP [-c] COMMAND: the command is a string sg
// hands to /bin/sh -c; without one it starts a shell.
func (an *analyzer) unwrapSg(args []Word, text string, depth int) unwrapped {
	if len(args) > 0 && args[0].Value == "-" {
		args = args[1:]
	}
	if len(args) < 2 {
		an.problem("%q runs a shell reading commands from its standard input, which cannot be checked", text)
		return unwrapped{}
	}
	rest := args[1:]
	if !rest[0].Dynamic && rest[0].Value == "-c" {
		rest = rest[1:]
	}
	return an.viaShell(joinedWord(rest), text, depth)
}

// joinedWord is words joined by spaces, as watch and sg build a command
// line from their arguments.
func joinedWord(ws []Word) Word {
	out := Word{}
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = w.Value
		out.Dynamic = out.Dynamic || w.Dynamic
	}
	out.Value = strings.Join(parts, " ")
	return out
}

// unwrapFlock reads flock [options] FILE COMMAND… or flock [options]
// FILE -c STRING (a string for /bin/sh -c), or flock FD (no command).
func (an *analyzer) unwrapFlock(args []Word, text string, depth int) unwrapped {
	next, ok := an.skipOptions(args, text, "-w -E", "--timeout --wait --conflict-exit-code")
	if !ok || len(next) < 2 {
		return unwrapped{}
	}
	rest := next[1:] // after the lock file
	if !rest[0].Dynamic && (rest[0].Value == "-c" || rest[0].Value == "--command") {
		if len(rest) < 2 {
			return unwrapped{}
		}
		return an.viaShell(rest[1], text, depth)
	}
	return unwrapped{next: rest, ok: true}
}

// unwrapScript reads script: -c hands a string to the user's shell, the
// operand is the typescript it writes (./typescript by default), and the
// log options name more files it writes. Without -c it starts an
// interactive shell.
func (an *analyzer) unwrapScript(args []Word, text string, depth int) unwrapped {
	g := grammar{valued: "cEIOBTmo", optional: "t", long: []string{"--command", "--echo", "--log-in", "--log-out", "--log-io",
		"--log-timing", "--logging-format", "--output-limit"}}
	p, ok := an.readOptions(g, args, text)
	if !ok {
		return unwrapped{}
	}
	for _, f := range p.values("-I", "-O", "-B", "-T", "-t", "--log-in", "--log-out", "--log-io", "--log-timing", "--timing") {
		an.output(f, text)
	}
	typescript := litWord("typescript")
	if len(p.operands) > 0 {
		typescript = p.operands[0]
	}
	an.output(typescript, text)
	if cmds := p.values("-c", "--command"); len(cmds) > 0 {
		return an.viaShell(cmds[len(cmds)-1], text, depth)
	}
	an.problem("%q runs an interactive shell reading commands from its standard input, which cannot be checked", text)
	return unwrapped{}
}

// unwrapWatch reads watch: it joins its command words with spaces and
// hands them to sh -c, unless -x (--exec) runs them as they are.
func (an *analyzer) unwrapWatch(args []Word, text string, depth int) unwrapped {
	g := grammar{stop: true, valued: "nq", optional: "d", long: []string{"--interval", "--equexit"}}
	p, ok := an.readOptions(g, args, text)
	switch {
	case !ok:
		return unwrapped{}
	case len(p.operands) == 0:
		return unwrapped{}
	case p.given("-x", "--exec"):
		return unwrapped{next: p.operands, ok: true}
	}
	return an.viaShell(joinedWord(p.operands), text, depth)
}

// unwrapEntr reads entr: its utility runs as given, or, with -s, as a
// string for the shell.
func (an *analyzer) unwrapEntr(args []Word, text string, depth int) unwrapped {
	g := grammar{stop: true}
	p, ok := an.readOptions(g, args, text)
	switch {
	case !ok:
		return unwrapped{}
	case len(p.operands) == 0:
		return unwrapped{}
	case p.has("-s"):
		return an.viaShell(p.operands[0], text, depth)
	}
	return unwrapped{next: p.operands, ok: true}
}

// unwrapTracer reads strace and ltrace: options end at the traced
// command; -o writes a file, or with a leading | or ! pipes the trace to
// a command; -E sets a variable of the command.
func (an *analyzer) unwrapTracer(args []Word, text string, depth int) unwrapped {
	g := grammar{stop: true, valued: "abeEIoOpPsSuUXAlDFnwx", long: []string{"--output", "--attach", "--user", "--env", "--trace-path",
		"--string-limit", "--summary-sort-by", "--columns", "--signal", "--trace", "--abbrev", "--verbose", "--raw", "--read", "--write",
		"--inject", "--fault", "--status", "--quiet", "--decode-pids", "--secontext", "--align", "--library", "--indent"}}
	p, ok := an.readOptions(g, args, text)
	if !ok {
		return unwrapped{}
	}
	for _, o := range p.values("-o", "--output") {
		if strings.HasPrefix(o.Value, "|") || strings.HasPrefix(o.Value, "!") {
			o.Value = o.Value[1:]
			an.viaShell(o, text, depth)
			continue
		}
		an.output(o, text)
	}
	for _, e := range p.values("-E", "--env") {
		if e.Dynamic {
			an.problem("%q sets a variable known only at run time", text)
		} else if isAssignment(e.Value) {
			an.checkVar(assignName(e.Value))
		}
	}
	return unwrapped{next: p.operands, ok: len(p.operands) > 0}
}

// unwrapGdb reads gdb: --args runs the program after it with its
// arguments; gdb's own commands (from -ex, -x, or standard input) can
// run any program (shell, !, python), which no rule sees.
func (an *analyzer) unwrapGdb(args []Word, text string, _ int) unwrapped {
	an.problem("%q runs gdb commands (from its options or standard input), which can run any program", text)
	for i, a := range args {
		if !a.Dynamic && a.Value == "--args" && i+1 < len(args) {
			return unwrapped{next: args[i+1:], ok: true}
		}
	}
	return unwrapped{}
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
			if i+1 < len(args) {
				an.chdir(args[i+1])
			}
			i += 2
		case strings.HasPrefix(v, "--chdir="):
			an.chdir(litWord(strings.TrimPrefix(v, "--chdir=")))
			i++
		case strings.HasPrefix(v, "-C"):
			an.chdir(litWord(strings.TrimPrefix(v, "-C")))
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
	assignRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*\+?=`) })
	identRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
)

// isAssignment reports whether s reads as NAME=value or NAME+=value.
func isAssignment(s string) bool { return assignRE().MatchString(s) }

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
	if ok && safeDevice(p) {
		return
	}
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
