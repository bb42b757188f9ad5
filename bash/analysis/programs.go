package analysis

import (
	"path"
	"strings"
	"sync"
)

// Access is what a program does with a file one of its arguments names.
type Access uint8

// Accesses.
const (
	// AccessUnknown: it may read or write the file, or the argument is no
	// file at all (the program is not known, or the argument's role is
	// not).
	AccessUnknown Access = iota
	// AccessRead: it reads the file (or lists the directory).
	AccessRead
	// AccessWrite: it creates, changes or removes the file.
	AccessWrite
	// AccessDir: it works in the directory, loading its configuration
	// and code from it (make -C, npm --prefix, git -C).
	AccessDir
)

func (a Access) String() string {
	switch a {
	case AccessRead:
		return "read"
	case AccessWrite:
		return "write"
	case AccessDir:
		return "work in"
	}
	return "use"
}

// PathArg is an argument of a command that names, or may name, a file.
type PathArg struct {
	// Path is tilde-expanded; a relative path is relative to the
	// directory the command runs in.
	Path   string
	Access Access
	// Text is the argument as written.
	Text string
	// Dynamic: the path is only known at run time (Path is not it: a
	// glob, a variable, a command's output, or words xargs appends).
	// Untrusted: the line may choose it (see [Word.MayBeOption]), so it
	// may be anywhere.
	Dynamic, Untrusted bool
	// Recursive: the program works through the whole tree below it (grep
	// -r, rm -r, tar, cp -r, find), files a rule names included.
	Recursive bool
}

// operands says what a program does with its operands.
type operands uint8

const (
	opsUnknown   operands = iota // files or not, read or written: not known
	opsRead                      // files it reads
	opsWrite                     // files it writes (touch, rm, tee)
	opsLastWrite                 // sources it reads, then the destination it writes (cp, install)
	opsMove                      // every one written (mv, ln -s moves or names them)
	opsSecond                    // an input it reads, then an output it writes (uniq, xxd)
	opsNone                      // no files (targets, names, numbers)
)

// program is what the analysis knows about a program's arguments: which
// options take values and what the values are, what its operands are,
// and what it does beyond what its words show.
type program struct {
	grammar
	// writes, reads and dirs are options whose value is a file the
	// program writes, a file it reads (configuration and code included),
	// or a directory it works in.
	writes, reads, dirs []string
	// text are options whose value is no file (patterns, formats,
	// scripts): left out of Paths.
	text []string
	// shell are options whose value is a command line the program runs
	// through a shell; argv those whose value is a program it runs, with
	// arguments split at spaces. Either is read as a command of the line.
	shell, argv []string
	// hidden are options that make the program do what its words do not
	// show (run a configured program, load code), each with the reason.
	hidden map[string]string
	// code are options whose value is code in the program's own language
	// (python -c, perl -e): it can run any program, and no deny rule can
	// see inside it.
	code []string
	// operands is what it does with its operands; script lists the
	// options that give the script or pattern when the first operand
	// would otherwise be one (grep -e), and scripted reports that the
	// first operand is a script or pattern unless one of them is given.
	operands operands
	scripted bool
	script   []string
	// recurse are the options that make it work through the whole tree
	// below its directory operands (grep -r, rm -r, cp -a); recurses:
	// it always does (rg).
	recurse  []string
	recurses bool
	// safe: none of its options runs a program or writes a file, so an
	// argument known only at run time (which may turn out to be an
	// option) cannot make it do more than its words show.
	safe bool
	// examine reads what the declarative part cannot (sed's script, git's
	// subcommands); it runs after the options and operands are recorded.
	examine func(an *analyzer, c *Command, x *invocation)
	// prepare rewrites the arguments before they are read (tar's
	// options without a dash).
	prepare func(args []Word) []Word
}

// programs are the programs whose arguments the analysis reads, by base
// name. A program not here (and not a wrapper) is read as unknown: any of
// its arguments may name a file or a program it runs.
var programs = map[string]*program{}

// plainPrograms run no other program and write nothing their operands do
// not name: their arguments are read as paths (unknown access) but never
// as commands.
var plainPrograms = map[string]bool{}

// programsOnce fills programs and plainPrograms on the first analysis, not
// at start-up: a run that never analyses a command (dsh version, a prompt
// before its first bash call) does not pay for building them.
// (A sync.Once, not OnceFunc: initPrograms reaches examine, which waits on
// it, and a variable initialised from it would be an initialisation cycle.)
var programsOnce sync.Once

func initPrograms() {
	def := func(names string, p *program) {
		for _, n := range strings.Fields(names) {
			programs[n] = p
		}
	}
	gnu := func(valued string, long ...string) grammar { return grammar{valued: valued, long: long} }

	def("cat tac nl head tail wc md5sum sha1sum sha224sum sha256sum sha384sum sha512sum b2sum cksum sum "+
		"od hexdump strings rev fold expand unexpand column paste base64 base32 basenc stat du cut join pr fmt "+
		"readlink realpath cmp comm diff diff3 sdiff less more zcat bzcat xzcat zless lsattr ls dir vdir", &program{operands: opsRead, safe: true})
	def("tree", &program{grammar: gnu("oILPH", "--filelimit", "--charset", "--fromfile", "--timefmt", "--sort", "--hintro", "--houtro"),
		writes: []string{"-o"}, text: []string{"-I", "-P", "-H", "--timefmt"}, operands: opsRead,
		hidden: map[string]string{"-R": "writes an HTML listing into every directory it visits (with -H)"}})
	def("file", &program{grammar: gnu("fmeFP", "--files-from", "--magic-file", "--exclude", "--separator", "--parameter"),
		reads: []string{"-f", "--files-from", "-m", "--magic-file"}, text: []string{"-e", "--exclude", "-F", "--separator", "-P", "--parameter"},
		operands: opsRead, examine: examineFile})
	def("split csplit shuf tr seq numfmt", &program{operands: opsUnknown})
	def("grep egrep fgrep zgrep rgrep", &program{
		grammar:  gnu("efmABCdD", "--regexp", "--file", "--max-count", "--after-context", "--before-context", "--context", "--label", "--include", "--exclude", "--exclude-from", "--exclude-dir", "--color", "--colour", "--binary-files", "--devices", "--directories", "--group-separator"),
		reads:    []string{"-f", "--file", "--exclude-from"},
		text:     []string{"-e", "--regexp", "--include", "--exclude", "--exclude-dir", "--label", "--group-separator"},
		operands: opsRead, scripted: true, script: []string{"-e", "--regexp", "-f", "--file"}, safe: true,
		recurse: []string{"-r", "-R", "--recursive", "--dereference-recursive"},
	})
	def("rg", &program{
		grammar: gnu("efgtTmABCjMErd", "--regexp", "--file", "--glob", "--iglob", "--type", "--type-not", "--type-add", "--type-clear", "--max-count",
			"--after-context", "--before-context", "--context", "--threads", "--max-columns", "--encoding", "--replace", "--max-depth", "--pre",
			"--pre-glob", "--ignore-file", "--sort", "--sortr", "--colors", "--color", "--path-separator", "--context-separator", "--field-context-separator",
			"--field-match-separator", "--max-filesize", "--dfa-size-limit", "--regex-size-limit", "--engine", "--hostname-bin", "--hyperlink-format", "--generate", "--type-list"),
		reads:    []string{"-f", "--file", "--ignore-file"},
		argv:     []string{"--pre", "--hostname-bin"},
		text:     []string{"-e", "--regexp", "-g", "--glob", "--iglob", "-t", "--type", "-T", "--type-not", "--type-add", "-r", "--replace", "--pre-glob", "--colors", "--context-separator"},
		operands: opsRead, scripted: true, script: []string{"-e", "--regexp", "-f", "--file"}, recurses: true,
	})
	def("ag", &program{operands: opsRead, scripted: true, recurses: true})
	def("sort", &program{
		grammar:  gnu("kotST", "--key", "--output", "--field-separator", "--temporary-directory", "--buffer-size", "--parallel", "--batch-size", "--compress-program", "--files0-from", "--random-source", "--sort"),
		writes:   []string{"-o", "--output", "-T", "--temporary-directory"},
		reads:    []string{"--files0-from", "--random-source"},
		argv:     []string{"--compress-program"},
		text:     []string{"-k", "--key", "-t", "--field-separator"},
		operands: opsRead,
	})
	def("uniq", &program{grammar: gnu("fsw", "--skip-fields", "--skip-chars", "--check-chars", "--all-repeated", "--group"), operands: opsSecond})
	def("xxd", &program{grammar: grammar{style: goStyle, long: []string{"-c", "-cols", "-g", "-groupsize", "-l", "-len", "-n", "-name", "-o", "-offset", "-s", "-seek"}, permute: true}, operands: opsSecond})
	def("tee", &program{grammar: gnu("", "--output-error"), operands: opsWrite, safe: true})
	def("touch rm rmdir mkdir unlink shred truncate mkfifo mknod", &program{
		grammar: gnu("rdtmsnZ", "--reference", "--date", "--mode", "--size", "--iterations", "--context", "--interactive", "--preserve-root", "--random-source"),
		reads:   []string{"-r", "--reference", "--random-source"}, text: []string{"-d", "--date", "-t", "-m", "--mode", "-s", "--size"},
		operands: opsWrite, safe: true, recurse: []string{"-r", "-R", "--recursive"},
	})
	def("chmod chown chgrp chattr setfacl", &program{grammar: gnu("", "--reference", "--from"), reads: []string{"--reference"}, operands: opsWrite, safe: true,
		recurse: []string{"-R", "--recursive"}})
	def("cp install", &program{
		grammar:  gnu("StmogCTZ", "--suffix", "--target-directory", "--backup", "--reflink", "--sparse", "--preserve", "--no-preserve", "--mode", "--owner", "--group", "--strip-program", "--context"),
		writes:   []string{"-t", "--target-directory"},
		argv:     []string{"--strip-program"},
		text:     []string{"-m", "--mode", "-o", "--owner", "-g", "--group", "-S", "--suffix"},
		operands: opsLastWrite, examine: examineTarget, recurse: []string{"-r", "-R", "-a", "--recursive", "--archive"},
	})
	def("ln link", &program{
		grammar: gnu("St", "--suffix", "--target-directory", "--backup"), writes: []string{"-t", "--target-directory"}, text: []string{"-S", "--suffix"},
		operands: opsLastWrite, examine: examineLink, safe: true,
	})
	def("mv", &program{
		grammar:  gnu("St", "--suffix", "--target-directory", "--backup"),
		writes:   []string{"-t", "--target-directory"},
		text:     []string{"-S", "--suffix"},
		operands: opsMove,
	})
	def("dd", &program{operands: opsNone, examine: examineDd})
	def("sed gsed", &program{
		grammar: grammar{valued: "efl", optional: "i", long: []string{"--expression", "--file", "--line-length"}}, reads: []string{"-f", "--file"}, text: []string{"-e", "--expression"},
		operands: opsRead, scripted: true, script: []string{"-e", "--expression", "-f", "--file"}, examine: examineSed,
	})
	def("awk gawk mawk nawk busybox-awk", &program{
		grammar:  gnu("fvFEilW", "--file", "--assign", "--field-separator", "--exec", "--include", "--load", "--source", "--lint", "--dump-variables", "--profile", "--debug", "--pretty-print"),
		reads:    []string{"-f", "--file", "-E", "--exec", "-i", "--include"},
		writes:   []string{"--dump-variables", "--profile", "--pretty-print", "--debug"},
		text:     []string{"-v", "--assign", "-F", "--field-separator", "-e", "--source", "-W"},
		hidden:   map[string]string{"-l": "loads a compiled extension", "--load": "loads a compiled extension"},
		operands: opsRead, scripted: true, script: []string{"-f", "--file", "-E", "--exec", "-e", "--source"}, examine: examineAwk,
	})
	def("jq gojq yq", &program{prepare: prepareJq,
		grammar: gnu("fL", "--from-file", "--indent", "--tab", "--slurpfile", "--rawfile", "--arg", "--argjson"), reads: []string{"-f", "--from-file", "--slurpfile", "--rawfile"}, dirs: []string{"-L"},
		text:     []string{"--arg", "--argjson"},
		operands: opsRead, scripted: true, script: []string{"-f", "--from-file"}, safe: true,
	})
	def("find", &program{operands: opsNone, examine: examineFind})
	def("tar gtar bsdtar", &program{
		prepare: prepareTar,
		grammar: gnu(tarValued, "--file", "--directory", "--files-from", "--exclude-from", "--listed-incremental", "--use-compress-program",
			"--info-script", "--new-volume-script", "--label", "--format", "--starting-file", "--newer", "--after-date", "--newer-mtime", "--blocking-factor",
			"--tape-length", "--to-command", "--rsh-command", "--rmt-command", "--checkpoint-action", "--exclude", "--transform", "--xform", "--owner", "--group", "--mode", "--mtime", "--suffix", "--backup", "--index-file", "--volno-file"),
		reads:    []string{"-T", "--files-from", "-X", "--exclude-from"},
		writes:   []string{"-g", "--listed-incremental", "--index-file", "--volno-file"},
		dirs:     []string{"-C", "--directory"},
		shell:    []string{"--to-command", "-F", "--info-script", "--new-volume-script"},
		argv:     []string{"-I", "--use-compress-program", "--rsh-command", "--rmt-command"},
		text:     []string{"-V", "--label", "-H", "--format", "--exclude", "--transform", "--xform", "--owner", "--group", "--mode", "--mtime", "-N", "--newer", "--after-date"},
		operands: opsRead, examine: examineTar,
	})
	def("zip", &program{grammar: gnu("bntTOx", "--temp-path", "--unzip-command", "--out"), argv: []string{"-TT", "--unzip-command"}, writes: []string{"-O", "--out", "-b", "--temp-path"},
		operands: opsRead, examine: examineZip, recurse: []string{"-r", "--recurse-paths"}})
	def("curl", &program{
		grammar: gnu("oKTdFDcbeuxHAXrwYyzECmQ", "--output", "--output-dir", "--config", "--upload-file", "--data", "--data-binary", "--data-raw", "--data-urlencode", "--data-ascii",
			"--form", "--form-string", "--dump-header", "--cookie-jar", "--cookie", "--trace", "--trace-ascii", "--stderr", "--libcurl", "--netrc-file", "--header", "--user", "--proxy",
			"--request", "--write-out", "--user-agent", "--referer", "--max-time", "--connect-timeout", "--retry", "--range", "--cert", "--key", "--cacert", "--capath", "--resolve", "--json"),
		writes:   []string{"-o", "--output", "--output-dir", "-D", "--dump-header", "-c", "--cookie-jar", "--trace", "--trace-ascii", "--stderr", "--libcurl"},
		reads:    []string{"-K", "--config", "-T", "--upload-file", "--netrc-file", "--cert", "--key", "--cacert"},
		text:     []string{"-H", "--header", "-u", "--user", "-x", "--proxy", "-X", "--request", "-w", "--write-out", "-A", "--user-agent", "-e", "--referer", "--resolve", "-m", "--max-time", "-r", "--range"},
		operands: opsNone, examine: examineCurl,
	})
	def("wget", &program{
		grammar:  gnu("OoaPieUtTwQ", "--output-document", "--output-file", "--append-output", "--directory-prefix", "--input-file", "--execute", "--post-file", "--body-file", "--user-agent", "--header", "--tries", "--timeout", "--wait", "--quota", "--config", "--load-cookies", "--save-cookies"),
		writes:   []string{"-O", "--output-document", "-o", "--output-file", "-a", "--append-output", "-P", "--directory-prefix", "--save-cookies"},
		reads:    []string{"-i", "--input-file", "--post-file", "--body-file", "--config", "--load-cookies"},
		hidden:   map[string]string{"-e": "runs wgetrc commands, which can write files", "--execute": "runs wgetrc commands, which can write files"},
		text:     []string{"-U", "--user-agent", "--header"},
		operands: opsNone,
	})
	def("make gmake", &program{
		grammar:  gnu("fCIoWjlE", "--file", "--makefile", "--directory", "--include-dir", "--old-file", "--assume-old", "--new-file", "--what-if", "--assume-new", "--jobs", "--load-average", "--eval", "--output-sync", "--jobserver-style", "--shuffle"),
		reads:    []string{"-f", "--file", "--makefile"},
		dirs:     []string{"-C", "--directory", "-I", "--include-dir"},
		code:     []string{"-E", "--eval"},
		text:     []string{"-o", "--old-file", "--assume-old", "-W", "--what-if", "--new-file", "--assume-new"},
		operands: opsNone, examine: examineMake,
	})
	def("ssh scp sftp", &program{
		grammar:  gnu("bcDEeFiIJlLmoOpPQRSWwBs", "--"),
		reads:    []string{"-i", "-F"},
		writes:   []string{"-E"},
		text:     []string{"-b", "-c", "-D", "-e", "-J", "-l", "-L", "-m", "-O", "-p", "-P", "-Q", "-R", "-W", "-w", "-B"},
		operands: opsNone, examine: examineSSH,
	})
	def("rsync", &program{
		grammar: gnu("eBfMTC", "--rsh", "--rsync-path", "--log-file", "--log-file-format", "--write-batch", "--only-write-batch", "--read-batch", "--files-from",
			"--exclude-from", "--include-from", "--password-file", "--temp-dir", "--backup-dir", "--partial-dir", "--compare-dest", "--copy-dest", "--link-dest",
			"--exclude", "--include", "--filter", "--chmod", "--chown", "--usermap", "--groupmap", "--out-format", "--suffix", "--block-size", "--max-size", "--min-size",
			"--timeout", "--port", "--sockopts", "--bwlimit", "--compress-choice", "--checksum-choice", "--info", "--debug", "--iconv", "--remote-option", "--stop-after", "--stop-at"),
		writes:   []string{"--log-file", "--write-batch", "--only-write-batch", "-T", "--temp-dir", "--backup-dir", "--partial-dir"},
		reads:    []string{"--read-batch", "--files-from", "--exclude-from", "--include-from", "--password-file", "--compare-dest", "--copy-dest", "--link-dest"},
		argv:     []string{"-e", "--rsh"},
		text:     []string{"--rsync-path", "--exclude", "--include", "--filter", "-f", "--chmod", "--chown", "--out-format", "--log-file-format", "--remote-option", "-M", "--suffix"},
		operands: opsLastWrite, recurse: []string{"-r", "-a", "--recursive", "--archive"},
	})
	def("python python2 python3 pypy pypy3", &program{grammar: grammar{stop: true, valued: "cmWXQ"}, code: []string{"-c"}, text: []string{"-m", "-W", "-X", "-Q"}, operands: opsUnknown})
	def("node nodejs bun deno", &program{
		grammar: grammar{stop: true, valued: "epr", long: []string{"--eval", "--print", "--require", "--import", "--loader", "--experimental-loader", "--input-type", "--env-file"}},
		code:    []string{"-e", "--eval", "-p", "--print"}, reads: []string{"-r", "--require", "--import", "--loader", "--experimental-loader", "--env-file"},
		operands: opsUnknown,
	})
	def("perl ruby", &program{grammar: grammar{stop: true, valued: "eEIMmxCdDlF0r"}, code: []string{"-e", "-E"}, dirs: []string{"-I"}, text: []string{"-M", "-m", "-C", "-d", "-D", "-l", "-F", "-0", "-r"}, operands: opsUnknown, examine: examineInPlace})
	def("php", &program{grammar: grammar{stop: true, valued: "rBREFcdz"}, code: []string{"-r", "-B", "-R", "-E"}, reads: []string{"-F", "-c", "-z"}, operands: opsUnknown})
	def("lua luajit Rscript julia osascript expect tclsh wish guile racket", &program{grammar: grammar{stop: true, valued: "elc"}, code: []string{"-e", "-c", "-l"}, operands: opsUnknown})
	def("git", &program{operands: opsNone, examine: examineGit})
	def("go", &program{operands: opsNone, examine: examineGo})
	def("npm pnpm yarn npx", &program{operands: opsNone, examine: examineNpm})
	def("cargo", &program{operands: opsNone, examine: examineCargo})
	def("patch", &program{grammar: gnu("pdDFiorBYzVg", "--directory", "--input", "--output", "--reject-file", "--prefix", "--basename-prefix", "--suffix"),
		reads: []string{"-i", "--input"}, writes: []string{"-o", "--output", "-r", "--reject-file"}, dirs: []string{"-d", "--directory"}, operands: opsWrite})

	for _, n := range strings.Fields("echo printf true false test [ pwd which whereis type ps uptime free nproc arch uname whoami id groups tty " +
		"locale printenv getconf sleep date hostname kill df man help basename dirname cd pushd popd dirs read") {
		plainPrograms[n] = true
	}
	for n := range programs {
		plainPrograms[n] = true
	}
	for _, n := range []string{"python", "python2", "python3", "pypy", "pypy3", "node", "nodejs", "bun", "deno", "perl", "ruby", "php",
		"lua", "luajit", "Rscript", "julia", "osascript", "expect", "tclsh", "wish", "guile", "racket", "npx"} {
		delete(plainPrograms, n) // their operands are scripts and arguments: a program may be among them
	}
}

// examine reads the arguments of the command a line runs (v, the
// innermost view) by its program's grammar: the files they name, the
// commands its options run, what it does that its words do not show.
func (an *analyzer) examine(c *Command, v View, depth int) {
	if len(v.Words) == 0 || v.Words[0].Dynamic {
		return
	}
	name := path.Base(v.Words[0].Value)
	args := v.Words[1:]
	programsOnce.Do(initPrograms)
	prog := programs[name]
	if prog == nil {
		if !plainPrograms[name] {
			an.unknownProgram(c, args, depth)
		} else if !neutralCommands[name] {
			an.argPaths(c, args)
		}
		if v.Open && !neutralCommands[name] {
			c.Paths = append(c.Paths, PathArg{Access: AccessUnknown, Text: "(the words xargs appends)", Dynamic: true, Untrusted: true})
		}
		return
	}
	if prog.prepare != nil {
		args = prog.prepare(args)
	}
	p := prog.read(args)
	if v.Open && prog.operands != opsNone {
		// xargs appends words the line does not show.
		c.Paths = append(c.Paths, PathArg{Access: AccessUnknown, Text: "(the words xargs appends)", Dynamic: true, Untrusted: true})
	}
	prog.record(an, c, &invocation{name: name, args: args, parsedArgs: p, depth: depth})
}

// invocation is one run of a known program: its name and arguments, read
// by its grammar.
type invocation struct {
	name string
	args []Word
	parsedArgs
	depth int
}

// record records what p (read by prog's grammar) says about c.
func (prog *program) record(an *analyzer, c *Command, x *invocation) {
	p, depth := &x.parsedArgs, x.depth
	in := func(list []string, name string) bool {
		for _, l := range list {
			if l == name {
				return true
			}
		}
		return false
	}
	if p.dynamic && !prog.safe {
		c.Hidden = append(c.Hidden, "an argument known only at run time may be an option that runs a program or writes a file")
	}
	scripted := prog.scripted
	for _, o := range p.opts {
		if r, ok := prog.hidden[o.name]; ok {
			c.Hidden = append(c.Hidden, o.name+" "+r)
		}
		if in(prog.code, o.name) {
			c.Code = true
		}
		if in(prog.script, o.name) {
			scripted = false
		}
		if !o.has {
			continue
		}
		switch {
		case in(prog.writes, o.name):
			an.pathArg(c, o.value, AccessWrite)
		case in(prog.reads, o.name):
			an.pathArg(c, o.value, AccessRead)
		case in(prog.dirs, o.name):
			an.pathArg(c, o.value, AccessDir)
		case in(prog.shell, o.name), in(prog.argv, o.name):
			an.runs(c, o.name, o.value, depth)
		case in(prog.text, o.name), in(prog.code, o.name), in(prog.script, o.name):
		default:
			if looksLikePath(o.value) {
				an.pathArg(c, o.value, AccessUnknown)
			}
		}
	}
	ops := p.operands
	if scripted && len(ops) > 0 {
		ops = ops[1:]
	}
	from := len(c.Paths)
	defer func() {
		if prog.recurses || len(prog.recurse) > 0 && (p.has(prog.recurse...) || p.given(prog.recurse...)) {
			if len(c.Paths) == from && prog.operands == opsRead {
				an.pathArg(c, litWord("."), AccessRead) // grep -r x, rg x: the current directory
			}
			recursive(c, from)
		}
	}()
	switch prog.operands {
	case opsRead:
		an.pathArgs(c, ops, AccessRead)
	case opsWrite:
		an.pathArgs(c, ops, AccessWrite)
	case opsMove:
		// A file moved away is read (its content goes on under the new
		// name) and removed.
		if len(ops) > 0 {
			an.pathArgs(c, ops[:len(ops)-1], AccessRead)
		}
		an.pathArgs(c, ops, AccessWrite)
	case opsUnknown:
		an.pathArgs(c, ops, AccessUnknown)
	case opsLastWrite:
		if len(ops) > 0 {
			an.pathArgs(c, ops[:len(ops)-1], AccessRead)
			an.pathArg(c, ops[len(ops)-1], AccessWrite)
		}
	case opsSecond:
		if len(ops) > 0 {
			an.pathArg(c, ops[0], AccessRead)
		}
		if len(ops) > 1 {
			an.pathArgs(c, ops[1:], AccessWrite)
		}
	}
	if prog.examine != nil {
		prog.examine(an, c, x)
	}
}

// runs records a command an option of c's program runs: it is read as a
// command of the line, whose rules apply on their own.
func (an *analyzer) runs(c *Command, opt string, v Word, depth int) {
	if v.Dynamic {
		an.problem("%q runs a command known only at run time (%s)", c.Text, opt)
		return
	}
	if strings.TrimSpace(v.Value) == "" {
		return
	}
	an.script(v.Value, depth+1)
	c.Hidden = append(c.Hidden, opt+" runs "+quoteWord(v.Value))
}

// pathArgs and pathArg record arguments that name files.
func (an *analyzer) pathArgs(c *Command, ws []Word, a Access) {
	for _, w := range ws {
		an.pathArg(c, w, a)
	}
}

func (an *analyzer) pathArg(c *Command, w Word, a Access) {
	if w.Value == "-" && !w.Dynamic || strings.Contains(w.Value, "://") {
		return
	}
	if w.under != "" {
		c.Paths = append(c.Paths, PathArg{Path: w.under, Access: a, Text: w.Value, Recursive: true})
		return
	}
	p, ok := an.pathWord(w)
	if !ok {
		if w.Dynamic || w.Tilde {
			c.Paths = append(c.Paths, PathArg{Access: a, Text: w.Value, Dynamic: true, Untrusted: w.MayBeOption || w.Tilde})
		}
		return
	}
	if p == "" {
		return
	}
	c.Paths = append(c.Paths, PathArg{Path: p, Access: a, Text: w.Value})
}

// recursive marks the paths of c recorded since index from as worked
// through whole (grep -r, rm -r, …).
func recursive(c *Command, from int) {
	for i := from; i < len(c.Paths); i++ {
		c.Paths[i].Recursive = true
	}
}

// looksLikePath reports whether an option value that the grammar does not
// know names a file outside the directory: absolute, under a home
// directory, or climbing out of it.
func looksLikePath(w Word) bool {
	v := w.Value
	return !w.Dynamic && (strings.HasPrefix(v, "/") || strings.HasPrefix(v, "~") || v == ".." || strings.HasPrefix(v, "../"))
}

// argPaths records every literal argument of a plain program (and the
// value of every --option=value) as a path it may use.
func (an *analyzer) argPaths(c *Command, args []Word) {
	for _, a := range args {
		v := a.Value
		if strings.HasPrefix(v, "-") {
			if _, val, ok := strings.Cut(v, "="); ok && looksLikePath(litWord(val)) {
				an.pathArg(c, litWord(val), AccessUnknown)
			}
			continue
		}
		an.pathArg(c, a, AccessUnknown)
	}
}

// unknownProgram reads the arguments of a program the analysis does not
// know. Any of them may name a file it uses; and since it may be a
// program that runs another one (a wrapper missing from the table, a
// task runner), each argument that could be a program name starts a
// reading of what it might run, and an argument that holds a command line
// is read as one: deny and ask rules see those readings (Maybe).
func (an *analyzer) unknownProgram(c *Command, args []Word, depth int) {
	an.argPaths(c, args)
	for i, a := range args {
		if a.Dynamic {
			continue
		}
		v := a.Value
		if strings.HasPrefix(v, "-") {
			if _, val, ok := strings.Cut(v, "="); ok && val != "" {
				c.Maybe = append(c.Maybe, View{Words: append([]Word{litWord(val)}, args[i+1:]...), Open: true})
				an.maybeScript(c, val, depth)
			}
			continue
		}
		c.Maybe = append(c.Maybe, View{Words: args[i:], Open: true})
		an.maybeScript(c, v, depth)
	}
}

// maybeScript adds the commands of s, when it reads as a command line of
// more than one word, to the readings c might run.
func (an *analyzer) maybeScript(c *Command, s string, depth int) {
	if !strings.ContainsAny(s, " \t\n;|&") || depth >= maxDepth {
		return
	}
	s = strings.TrimLeft(s, ":!") // an editor's or debugger's shell escape: vim -c '!cmd', gdb's !cmd
	sub := &analyzer{a: &Line{}, home: an.home}
	sub.script(s, depth+1)
	for _, sc := range sub.a.Commands {
		for _, v := range sc.Views {
			v.Open = true
			c.Maybe = append(c.Maybe, v)
		}
		c.Maybe = append(c.Maybe, sc.Maybe...)
	}
}
