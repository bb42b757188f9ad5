package analysis

import (
	"net/url"
	"path"
	"strings"
)

// This file holds what the declarative program table cannot say: scripts
// in a program's own language (sed, awk), expressions (find), operands
// shaped key=value (dd) and options without a dash (tar).

// examineFile: file -C compiles the magic files into NAME.mgc in the
// current directory.
func examineFile(an *analyzer, c *Command, x *invocation) {
	if !x.given("-C", "--compile") {
		return
	}
	names := x.values("-m", "--magic-file")
	if len(names) == 0 {
		names = []Word{litWord("magic")}
	}
	for _, m := range names {
		for _, part := range strings.Split(m.Value, ":") {
			an.pathArg(c, litWord(path.Base(part)+".mgc"), AccessWrite)
		}
	}
}

// examineTarget: cp -s and -l make links instead of copies.
func examineTarget(an *analyzer, c *Command, x *invocation) {
	if x.name == "cp" && x.given("-s", "-l", "--symbolic-link", "--link") {
		an.a.Links = true
	}
}

// examineLink: ln makes links.
func examineLink(an *analyzer, _ *Command, _ *invocation) { an.a.Links = true }

// examineDd reads dd's key=value operands: if= is read, of= written.
func examineDd(an *analyzer, c *Command, x *invocation) {
	for _, a := range x.args {
		k, v, ok := strings.Cut(a.Value, "=")
		if !ok || a.Dynamic {
			continue
		}
		switch k {
		case "if":
			an.pathArg(c, litWord(v), AccessRead)
		case "of":
			an.pathArg(c, litWord(v), AccessWrite)
		}
	}
}

// examineSed reads sed's scripts: from -e and --expression, or else the
// first operand. With -i (--in-place) the file operands are written. A
// script's e command runs a command line (read as a command of the line),
// s///e runs the pattern space as one (code no rule can see), w and W
// write files, r and R read them. A script file (-f) is not read.
func examineSed(an *analyzer, c *Command, x *invocation) {
	var scripts []Word
	scripts = append(scripts, x.values("-e", "--expression")...)
	files := x.operands
	if len(scripts) == 0 && !x.has("-f", "--file") && len(files) > 0 {
		scripts, files = files[:1], files[1:]
	}
	if x.has("-i") || x.given("--in-place") {
		an.pathArgs(c, files, AccessWrite)
	}
	for _, s := range scripts {
		if s.Dynamic {
			c.Code = true
			c.Hidden = append(c.Hidden, "its script is only known at run time")
			continue
		}
		sc := scanSed(s.Value)
		for _, cmd := range sc.execs {
			if strings.TrimSpace(cmd) == "" {
				c.Code = true
				c.Hidden = append(c.Hidden, "its e command runs the pattern space as a command")
				continue
			}
			an.script(cmd, x.depth+1)
			c.Hidden = append(c.Hidden, "its e command runs "+quoteWord(cmd))
		}
		if sc.evalSubst {
			c.Code = true
			c.Hidden = append(c.Hidden, "s///e runs the substituted text as a command")
		}
		for _, f := range sc.writes {
			an.pathArg(c, litWord(f), AccessWrite)
		}
		for _, f := range sc.reads {
			an.pathArg(c, litWord(f), AccessRead)
		}
		if sc.unreadable {
			c.Hidden = append(c.Hidden, "its script cannot be fully read (it may run commands or write files)")
		}
	}
}

// sedScan is what a sed script does besides editing the stream.
type sedScan struct {
	execs, writes, reads  []string
	evalSubst, unreadable bool
}

// scanSed reads a GNU sed script far enough to find the commands that run
// programs or touch files: e, s///e, w, W, s///w, r, R.
func scanSed(s string) sedScan {
	var sc sedScan
	i := 0
	restOfLine := func() string {
		j := strings.IndexByte(s[i:], '\n')
		if j < 0 {
			j = len(s) - i
		}
		out := s[i : i+j]
		i += j
		return out
	}
	skipDelimited := func(delim byte) bool { // past the next unescaped delim
		for i < len(s) {
			c := s[i]
			i++
			if c == '\\' && i < len(s) {
				i++
				continue
			}
			if c == delim {
				return true
			}
		}
		return false
	}
	address := func() {
		for i < len(s) {
			switch c := s[i]; {
			case c >= '0' && c <= '9' || c == '$' || c == ',' || c == '~' || c == '+' || c == ' ' || c == '\t':
				i++
			case c == '/':
				i++
				skipDelimited('/')
			case c == '\\' && i+1 < len(s):
				d := s[i+1]
				i += 2
				skipDelimited(d)
			case c == 'I' || c == 'M':
				i++
			default:
				return
			}
		}
	}
	for i < len(s) {
		for i < len(s) && strings.IndexByte(" \t\n;", s[i]) >= 0 {
			i++
		}
		if i >= len(s) {
			break
		}
		address()
		for i < len(s) && (s[i] == '!' || s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i >= len(s) {
			break
		}
		cmd := s[i]
		i++
		switch cmd {
		case '{', '}', '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
		case '#', ':', 'a', 'i', 'c':
			// To the end of the line; a\ text continues over escaped newlines.
			for {
				line := restOfLine()
				if !strings.HasSuffix(line, "\\") || i >= len(s) {
					break
				}
				i++
			}
		case 'b', 't', 'T', 'l', 'L', 'q', 'Q', 'v':
			for i < len(s) && s[i] != ';' && s[i] != '\n' && s[i] != '}' {
				i++
			}
		case 'r', 'R':
			sc.reads = append(sc.reads, strings.TrimSpace(restOfLine()))
		case 'w', 'W':
			sc.writes = appendFile(sc.writes, strings.TrimSpace(restOfLine()))
		case 'e':
			sc.execs = append(sc.execs, strings.TrimSpace(restOfLine()))
		case 's', 'y':
			if i >= len(s) {
				sc.unreadable = true
				return sc
			}
			delim := s[i]
			i++
			if !skipDelimited(delim) || !skipDelimited(delim) {
				sc.unreadable = true
				return sc
			}
			if cmd == 'y' {
				break
			}
			for i < len(s) && s[i] != ';' && s[i] != '\n' && s[i] != '}' {
				f := s[i]
				i++
				switch {
				case f == 'e':
					sc.evalSubst = true
				case f == 'w':
					sc.writes = appendFile(sc.writes, strings.TrimSpace(restOfLine()))
				case strings.IndexByte("gpiImM0123456789 \t", f) < 0:
					sc.unreadable = true
					return sc
				}
			}
		default:
			sc.unreadable = true
			return sc
		}
	}
	return sc
}

// appendFile adds a file a sed w writes, unless it is a standard stream.
func appendFile(list []string, f string) []string {
	switch f {
	case "/dev/stdout", "/dev/stderr":
		return list
	}
	return append(list, f)
}

// examineAwk reads an awk program (the first operand, unless -f, -E or
// -e gives it): system(), pipes to and from commands, and print's output
// redirections run programs and write files the analysis cannot name.
// The command lines written as string literals in the program are read as
// commands of the line, so a deny rule sees the plain ones; the program
// itself is code no rule can see into.
func examineAwk(an *analyzer, c *Command, x *invocation) {
	var progs []Word
	progs = append(progs, x.values("-e", "--source")...)
	if len(progs) == 0 && !x.has("-f", "--file", "-E", "--exec") && len(x.operands) > 0 {
		progs = x.operands[:1]
	}
	for _, p := range progs {
		if p.Dynamic {
			c.Code = true
			c.Hidden = append(c.Hidden, "its program is only known at run time")
			continue
		}
		runs, writes, literals := scanAwk(p.Value)
		if runs {
			c.Code = true
			c.Hidden = append(c.Hidden, "its program runs commands (system(), pipes)")
			for _, l := range literals {
				an.script(l, x.depth+1)
			}
		}
		if writes {
			c.Hidden = append(c.Hidden, "its program writes to files it names (print >)")
		}
	}
}

// scanAwk reports whether an awk program runs commands or redirects
// output to files, and returns its string literals.
func scanAwk(prog string) (runs, writes bool, literals []string) {
	var b strings.Builder // the program with string literals blanked
	for i := 0; i < len(prog); i++ {
		ch := prog[i]
		if ch != '"' {
			b.WriteByte(ch)
			continue
		}
		var lit strings.Builder
		for i++; i < len(prog) && prog[i] != '"'; i++ {
			if prog[i] == '\\' && i+1 < len(prog) {
				i++
			}
			lit.WriteByte(prog[i])
		}
		literals = append(literals, lit.String())
		b.WriteString(`""`)
	}
	code := b.String()
	for i := 0; i < len(code); i++ {
		switch code[i] {
		case '|':
			if i+1 < len(code) && code[i+1] == '|' {
				i++
				continue
			}
			runs = true
		}
	}
	if idx := strings.Index(code, "system"); idx >= 0 && strings.HasPrefix(strings.TrimLeft(code[idx+len("system"):], " \t"), "(") {
		runs = true
	}
	// print and printf redirect output with > and >> outside parentheses.
	for _, kw := range []string{"printf", "print"} {
		for rest := code; ; {
			j := strings.Index(rest, kw)
			if j < 0 {
				break
			}
			rest = rest[j+len(kw):]
			depth := 0
			for k := 0; k < len(rest); k++ {
				switch rest[k] {
				case '(':
					depth++
				case ')':
					depth--
				case '>':
					if depth <= 0 {
						writes = true
					}
				case ';', '}', '\n':
					k = len(rest)
				}
			}
		}
	}
	return runs, writes, literals
}

// examineFind reads find: the start points before the expression, the
// files the expression's actions write (-fprint, -fls) and read (-newer),
// the commands -exec, -execdir, -ok and -okdir run (read as commands of
// the line, with {} known only at run time), and -delete, which makes the
// start points written.
func examineFind(an *analyzer, c *Command, x *invocation) {
	args := x.args
	i := 0
	for i < len(args) && !args[i].Dynamic && (args[i].Value == "-H" || args[i].Value == "-L" || args[i].Value == "-P" ||
		strings.HasPrefix(args[i].Value, "-O") || args[i].Value == "-D") {
		if args[i].Value == "-D" {
			i++
		}
		i++
	}
	var starts []Word
	for i < len(args) && (args[i].Dynamic || !strings.HasPrefix(args[i].Value, "-") && args[i].Value != "(" && args[i].Value != "!") {
		starts = append(starts, args[i])
		i++
	}
	if len(starts) == 0 {
		starts = []Word{litWord(".")}
	}
	from := len(c.Paths)
	defer recursive(c, from) // find walks the whole tree below its start points
	access := AccessRead
	for j := i; j < len(args); j++ {
		switch args[j].Value {
		case "-delete":
			access = AccessWrite
		case "-fprint", "-fprint0", "-fls", "-fprintf":
			if j+1 < len(args) {
				an.pathArg(c, args[j+1], AccessWrite)
			}
		case "-newer", "-anewer", "-cnewer", "-samefile", "-files0-from":
			if j+1 < len(args) {
				an.pathArg(c, args[j+1], AccessRead)
			}
		case "-exec", "-execdir", "-ok", "-okdir":
			k := j + 1
			for k < len(args) && !(!args[k].Dynamic && (args[k].Value == ";" || args[k].Value == "+")) {
				k++
			}
			inner := make([]Word, 0, k-j-1)
			for _, w := range args[j+1 : k] {
				if strings.Contains(w.Value, "{}") {
					w.Dynamic = true
					if w.Value == "{}" && len(starts) == 1 && !starts[0].Dynamic {
						// A file find found: somewhere below its start point.
						w.under = starts[0].Value
						if p, ok := an.pathWord(starts[0]); ok {
							w.under = p
						}
					}
				}
				inner = append(inner, w)
			}
			if len(inner) == 0 {
				an.problem("find %s without a command", args[j].Value)
			} else {
				an.simple(inner, "", x.depth+1)
			}
			j = k
		}
	}
	an.pathArgs(c, starts, access)
}

// tarValued are tar's short options that take a value.
const tarValued = "fCTXgIFVHKNbL"

// prepareTar turns tar's traditional first argument, options without a
// dash (tar czf a.tgz dir), into dashed ones whose values follow in order.
func prepareTar(args []Word) []Word {
	if len(args) == 0 || args[0].Dynamic || strings.HasPrefix(args[0].Value, "-") {
		return args
	}
	first := args[0].Value
	for _, ch := range first {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z') {
			return args
		}
	}
	out := make([]Word, 0, len(first)+len(args))
	rest := args[1:]
	for _, ch := range first {
		out = append(out, litWord("-"+string(ch)))
		if strings.ContainsRune(tarValued, ch) && len(rest) > 0 {
			out, rest = append(out, rest[0]), rest[1:] // values follow the letters, in order
		}
	}
	return append(out, rest...)
}

// examineTar: the archive (-f) is written when tar creates or appends,
// and read otherwise; extraction writes into -C's directory or the
// current one. --checkpoint-action=exec= runs a command. An archive named
// host:file is reached through rsh, and -P (--absolute-names) lets
// members land anywhere.
func examineTar(an *analyzer, c *Command, x *invocation) {
	create := x.has("-c", "-r", "-u", "-A") || x.given("--create", "--append", "--update", "--catenate", "--concatenate")
	for _, f := range x.values("-f", "--file") {
		if f.Value == "-" {
			continue
		}
		if host, _, ok := strings.Cut(f.Value, ":"); ok && !strings.Contains(host, "/") && !x.given("--force-local") {
			c.Hidden = append(c.Hidden, "reaches the archive "+quoteWord(f.Value)+" through a remote shell")
		}
		if create {
			an.pathArg(c, f, AccessWrite)
		} else {
			an.pathArg(c, f, AccessRead)
		}
	}
	if create {
		from := len(c.Paths)
		an.pathArgs(c, x.operands, AccessRead) // the files archived, whole trees
		recursive(c, from)
	}
	if x.has("-x") || x.given("--extract", "--get") {
		dirs := x.values("-C", "--directory")
		if len(dirs) == 0 {
			dirs = []Word{litWord(".")}
		}
		an.pathArgs(c, dirs, AccessWrite)
	}
	if x.has("-P") || x.given("--absolute-names") {
		c.Hidden = append(c.Hidden, "-P writes members wherever their names say, outside the directory too")
	}
	for _, a := range x.values("--checkpoint-action") {
		if cmd, ok := strings.CutPrefix(a.Value, "exec="); ok {
			an.runs(c, "--checkpoint-action", Word{Value: cmd, Dynamic: a.Dynamic}, x.depth)
		}
	}
}

// examineZip: zip's first operand is the archive it writes; -TT
// (--unzip-command) runs a command to test it.
func examineZip(an *analyzer, c *Command, x *invocation) {
	if len(x.operands) > 0 {
		an.pathArg(c, x.operands[0], AccessWrite)
	}
	for i, a := range x.args {
		switch {
		case a.Value == "-TT" && i+1 < len(x.args):
			an.runs(c, "-TT", x.args[i+1], x.depth)
		case strings.HasPrefix(a.Value, "--unzip-command="):
			an.runs(c, "--unzip-command", litWord(strings.TrimPrefix(a.Value, "--unzip-command=")), x.depth)
		}
	}
}

// examineCurl: @file data and form values are files curl reads and
// sends, file:// URLs are local files, -O writes a file named by the URL
// and -J one named by the server; -K takes more options from a file.
func examineCurl(an *analyzer, c *Command, x *invocation) {
	for _, v := range x.values("-d", "--data", "--data-binary", "--data-urlencode", "--data-ascii", "--json", "-F", "--form") {
		s := v.Value
		if i := strings.IndexAny(s, "@<"); i >= 0 && !v.Dynamic {
			f, _, _ := strings.Cut(s[i+1:], ";")
			an.pathArg(c, litWord(f), AccessRead)
		}
	}
	remoteName := x.has("-O") || x.given("--remote-name", "--remote-name-all")
	for _, u := range x.operands {
		if u.Dynamic {
			continue
		}
		if f, ok := strings.CutPrefix(u.Value, "file://"); ok {
			if i := strings.IndexByte(f, '/'); i >= 0 {
				an.pathArg(c, litWord(f[i:]), AccessRead)
			}
			continue
		}
		if remoteName {
			if pu, err := url.Parse(u.Value); err == nil && path.Base(pu.Path) != "/" && path.Base(pu.Path) != "." {
				an.pathArg(c, litWord(path.Base(pu.Path)), AccessWrite)
			}
		}
	}
	if x.has("-J") || x.given("--remote-header-name") {
		c.Hidden = append(c.Hidden, "-J writes a file the server names")
	}
	if x.has("-K") || x.given("--config") {
		c.Hidden = append(c.Hidden, "-K takes more options (output files among them) from a file")
	}
}

// makeProgramVars are make variables recipes commonly run as programs.
var makeProgramVars = map[string]bool{
	"SHELL": true, "MAKESHELL": true, ".SHELLFLAGS": true, "MAKE": true, "MAKEFLAGS": true, "MAKEFILES": true, "CC": true, "CXX": true,
	"CPP": true, "LD": true, "AR": true, "AS": true, "FC": true, "RM": true, "INSTALL": true, "LEX": true, "YACC": true, "GO": true,
	"NPM": true, "NODE": true, "PYTHON": true, "PERL": true, "RUBY": true, "CARGO": true, "DOCKER": true, "BASH": true, "SH": true,
}

// examineMake: --eval runs make code, and a variable set on the command
// line (make CC=/tmp/x) overrides the makefile's, which its recipes may
// run as a program.
func examineMake(an *analyzer, c *Command, x *invocation) {
	if x.has("-E") || x.given("--eval") {
		c.Hidden = append(c.Hidden, "--eval runs make code, which can run any command")
	}
	for _, o := range x.operands {
		if o.Dynamic {
			c.Hidden = append(c.Hidden, "an operand known only at run time may set a variable its recipes run")
			continue
		}
		name, val, ok := strings.Cut(o.Value, "=")
		if !ok {
			continue
		}
		name = strings.TrimRight(name, ":+?!")
		if makeProgramVars[name] || strings.ContainsAny(val, "/$`;|&() ") {
			c.Hidden = append(c.Hidden, "sets make variable "+name+", which its recipes may run as a program or path")
		}
		if looksLikePath(litWord(val)) {
			an.pathArg(c, litWord(val), AccessUnknown)
		}
	}
}

// sshCommandKeys are ssh options whose value is a command line ssh runs
// locally.
var sshCommandKeys = map[string]bool{"proxycommand": true, "localcommand": true, "knownhostscommand": true}

// examineSSH: ssh's -o ProxyCommand, LocalCommand and KnownHostsCommand
// run a command line here (read as a command of the line); -F takes
// configuration, which can hold them, from a file; scp -S and sftp -S and
// -D run a program; scp's local destination is written.
func examineSSH(an *analyzer, c *Command, x *invocation) {
	for _, o := range x.values("-o") {
		if o.Dynamic {
			c.Hidden = append(c.Hidden, "an -o option is only known at run time")
			continue
		}
		key, val := o.Value, ""
		if i := strings.IndexAny(key, "= \t"); i >= 0 {
			key, val = key[:i], strings.TrimLeft(key[i+1:], "= \t")
		}
		key = strings.ToLower(key)
		switch {
		case sshCommandKeys[key] && strings.ToLower(val) != "none":
			an.runs(c, "-o "+key, litWord(val), x.depth)
		case key == "include":
			c.Hidden = append(c.Hidden, "-o Include reads configuration, which can run commands, from "+quoteWord(val))
		}
	}
	for _, f := range x.values("-F") {
		if f.Value != "/dev/null" && f.Value != "none" {
			c.Hidden = append(c.Hidden, "-F reads configuration, which can run commands (ProxyCommand, LocalCommand, Match exec), from "+quoteWord(f.Value))
		}
	}
	if x.name == "scp" || x.name == "sftp" {
		for _, prog := range x.values("-S", "-D") {
			an.runs(c, "-S/-D", prog, x.depth)
		}
	}
	if x.name == "scp" && len(x.operands) > 0 {
		local := func(w Word) bool {
			host, _, ok := strings.Cut(w.Value, ":")
			return !ok || strings.Contains(host, "/")
		}
		last := x.operands[len(x.operands)-1]
		for _, w := range x.operands[:len(x.operands)-1] {
			if local(w) {
				an.pathArg(c, w, AccessRead)
			}
		}
		if local(last) {
			an.pathArg(c, last, AccessWrite)
		}
	}
}

// examineInPlace: perl -i and ruby -i edit their file operands in place.
func examineInPlace(an *analyzer, c *Command, x *invocation) {
	if !x.has("-i") {
		return
	}
	files := x.operands
	if !x.has("-e", "-E") && len(files) > 0 {
		files = files[1:] // the script
	}
	an.pathArgs(c, files, AccessWrite)
}

// examineCargo: --config can set the programs cargo runs
// (build.rustc-wrapper, target.<triple>.runner, a linker), and -Z
// unstable options change what it does; --manifest-path builds another
// package, whose build scripts run.
func examineCargo(an *analyzer, c *Command, x *invocation) {
	g := grammar{long: []string{"--manifest-path", "--config", "--target-dir", "--color", "--target", "--features", "--package", "--jobs",
		"--profile", "--bin", "--example", "--test", "--bench", "--message-format", "--root", "--path", "--lockfile-path", "--artifact-dir",
		"--out-dir", "--exclude", "--registry", "--index", "--git", "--branch", "--tag", "--rev", "--timings"}, valued: "CZFpjr"}
	p := g.read(x.args)
	for _, o := range p.opts {
		switch o.name {
		case "--config":
			c.Hidden = append(c.Hidden, "--config can name programs cargo runs (build.rustc-wrapper, target runners, linkers)")
		case "-Z":
			c.Hidden = append(c.Hidden, "-Z changes what cargo does")
		case "--manifest-path", "--path":
			an.pathArg(c, o.value, AccessRead)
		case "--target-dir", "--root", "--artifact-dir", "--out-dir":
			an.pathArg(c, o.value, AccessWrite)
		case "-C":
			an.pathArg(c, o.value, AccessDir)
		}
	}
}

// prepareJq drops the name jq's two-word options take first (--arg NAME
// VALUE, --slurpfile NAME FILE), so the grammar sees one value each: the
// text, or the file read.
func prepareJq(args []Word) []Word {
	out := make([]Word, 0, len(args))
	for i := 0; i < len(args); i++ {
		out = append(out, args[i])
		switch args[i].Value {
		case "--arg", "--argjson", "--slurpfile", "--rawfile":
			i++ // the name
		case "--args", "--jsonargs":
			return append(out, args[i+1:]...) // positional values, not files
		}
	}
	return out
}
