package analysis

import "strings"

// goValued are the go command's flags that take a value (build, test and
// list flags; the test binary's -test.* flags are read without their
// prefix).
var goValued = []string{"-C", "-o", "-p", "-asmflags", "-buildmode", "-compiler", "-gccgoflags", "-gcflags", "-installsuffix",
	"-ldflags", "-mod", "-modfile", "-overlay", "-pgo", "-pkgdir", "-tags", "-toolexec", "-exec", "-coverpkg", "-covermode",
	"-coverprofile", "-cpuprofile", "-memprofile", "-blockprofile", "-mutexprofile", "-trace", "-outputdir", "-run", "-bench",
	"-count", "-cpu", "-timeout", "-parallel", "-benchtime", "-list", "-skip", "-shuffle", "-fuzz", "-fuzztime",
	"-fuzzminimizetime", "-vet", "-blockprofilerate", "-memprofilerate", "-mutexprofilefraction", "-f", "-vettool", "-reuse",
	"-test.coverprofile", "-test.cpuprofile", "-test.memprofile", "-test.blockprofile", "-test.mutexprofile", "-test.trace",
	"-test.outputdir", "-test.run", "-test.bench", "-test.count", "-test.timeout", "-test.gocoverdir", "-test.testlogfile", "-test.fuzzcachedir"}

// goWrites are flags whose value is a file or directory the go command
// (or the test binary) writes.
var goWrites = []string{"-o", "-coverprofile", "-cpuprofile", "-memprofile", "-blockprofile", "-mutexprofile", "-trace",
	"-outputdir", "-pkgdir", "-modfile", "-test.coverprofile", "-test.cpuprofile", "-test.memprofile", "-test.blockprofile",
	"-test.mutexprofile", "-test.trace", "-test.outputdir", "-test.gocoverdir", "-test.testlogfile", "-test.fuzzcachedir"}

// examineGo reads a go command: -exec, -toolexec and -vettool run a
// program (read as a command of the line); the output and profile flags
// write files, -C works in another directory, -overlay and -pgo read
// files; linker and compiler flags that name an external linker run it;
// go env -w changes the Go environment of every later go command.
func examineGo(an *analyzer, c *Command, x *invocation) {
	if len(x.args) == 0 || x.args[0].Dynamic {
		return
	}
	sub := x.args[0].Value
	g := grammar{style: goStyle, long: goValued, permute: sub == "test"}
	args := x.args[1:]
	var binary []Word // go test: what follows -args, for the test binary
	if sub == "test" {
		for i, a := range args {
			if a.Value == "-args" || a.Value == "--args" {
				args, binary = args[:i], args[i+1:]
				break
			}
		}
	}
	if len(binary) > 0 {
		// The test binary reads its own -test.* flags (a profile it
		// writes) and whatever the test makes of the rest.
		bg := grammar{style: goStyle, long: goValued, permute: true}
		bp := bg.read(binary)
		for _, o := range bp.opts {
			if o.has && contains(goWrites, o.name) {
				an.pathArg(c, o.value, AccessWrite)
			}
		}
		an.argPaths(c, bp.operands)
	}
	if sub == "-C" && len(x.args) > 1 { // go -C dir build …
		an.pathArg(c, x.args[1], AccessDir)
		if len(x.args) > 2 {
			an.examineGoRest(c, x.args[2:], x.depth)
		}
		return
	}
	p := g.read(args)
	if p.dynamic && sub != "version" && sub != "doc" && sub != "help" {
		c.Hidden = append(c.Hidden, "an argument known only at run time may be a flag that runs a program (-exec, -toolexec) or writes a file")
	}
	for _, o := range p.opts {
		name := o.name
		switch {
		case !o.has:
		case name == "-exec" || name == "-toolexec" || name == "-vettool":
			an.runs(c, name, o.value, x.depth)
		case contains(goWrites, name):
			an.pathArg(c, o.value, AccessWrite)
		case name == "-C":
			an.pathArg(c, o.value, AccessDir)
		case name == "-overlay" || name == "-pgo":
			an.pathArg(c, o.value, AccessRead)
		case name == "-ldflags" || name == "-gcflags" || name == "-asmflags" || name == "-gccgoflags":
			if o.value.Dynamic || strings.Contains(o.value.Value, "extld") || strings.Contains(o.value.Value, "extar") || strings.Contains(o.value.Value, "linkmode") {
				c.Hidden = append(c.Hidden, name+" can name an external program to run (-extld, -extar)")
			}
		}
	}
	switch sub {
	case "env":
		if p.has("-w", "-u") {
			an.pathArg(c, Word{Value: "~/.config/go/env", Tilde: true, Home: true}, AccessWrite)
			c.Hidden = append(c.Hidden, "go env -w changes the environment of every later go command")
		}
	case "test", "vet", "list", "build", "install", "run":
		ops := p.operands
		if sub == "run" && len(ops) > 1 {
			ops = ops[:1] // the program's own arguments follow
		}
		an.pathArgs(c, ops, AccessRead)
	}
}

// examineGoRest examines "go SUB …" after go -C dir.
func (an *analyzer) examineGoRest(c *Command, rest []Word, depth int) {
	examineGo(an, c, &invocation{name: "go", args: rest, depth: depth})
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// npmValued are npm's (and pnpm's and yarn's) options that take a value.
var npmValued = []string{"--prefix", "-C", "--dir", "--cwd", "--userconfig", "--globalconfig", "--script-shell", "--node-options",
	"--workspace", "-w", "--cache", "--registry", "--loglevel", "--tag", "--otp", "--access", "--scope", "--location", "--call",
	"-c", "--filter", "--package", "-p", "--shell"}

// examineNpm reads npm, pnpm, yarn and npx: --prefix (-C, --dir, --cwd)
// and --workspace work in another directory, whose package.json scripts
// run; --userconfig and --globalconfig read configuration that can name
// the shell scripts run with (script-shell) and code node loads
// (node-options); --script-shell names that program; npm exec -c (and
// npx -c) hands a command line to the shell; npm config set writes a
// configuration file.
func examineNpm(an *analyzer, c *Command, x *invocation) {
	g := grammar{long: npmValued, valued: "Cwcp"}
	p := g.read(x.args)
	if p.dynamic {
		c.Hidden = append(c.Hidden, "an argument known only at run time may be an option that runs a program (--script-shell) or loads code")
	}
	for _, o := range p.opts {
		if !o.has {
			if strings.HasPrefix(o.name, "--node-options") || strings.HasPrefix(o.name, "--script-shell") {
				c.Hidden = append(c.Hidden, o.name+" can make npm run other programs")
			}
			continue
		}
		switch o.name {
		case "--prefix", "-C", "--dir", "--cwd", "--workspace", "-w":
			an.pathArg(c, o.value, AccessDir)
		case "--userconfig", "--globalconfig":
			an.pathArg(c, o.value, AccessRead)
			c.Hidden = append(c.Hidden, o.name+" reads configuration that can name programs to run")
		case "--script-shell", "--shell":
			an.runs(c, o.name, o.value, x.depth)
		case "--node-options":
			c.Hidden = append(c.Hidden, "--node-options can make node load any code (--require)")
		case "--cache":
			an.pathArg(c, o.value, AccessWrite)
		case "--call", "-c":
			if x.name == "npx" || len(p.operands) > 0 && (p.operands[0].Value == "exec" || p.operands[0].Value == "x") {
				an.runs(c, o.name, o.value, x.depth)
			}
		}
	}
	ops := p.operands
	if x.name == "npx" {
		if len(ops) > 0 {
			c.Maybe = append(c.Maybe, View{Words: ops, Open: true})
		}
		return
	}
	if len(ops) == 0 {
		return
	}
	an.argPaths(c, ops[1:])
	switch ops[0].Value {
	case "exec", "x", "dlx":
		if len(ops) > 1 {
			c.Maybe = append(c.Maybe, View{Words: ops[1:], Open: true})
		}
	case "config", "set":
		if len(ops) > 1 && (ops[0].Value == "set" || ops[1].Value == "set" || ops[1].Value == "delete" || ops[1].Value == "edit") {
			file := Word{Value: "~/.npmrc", Tilde: true, Home: true}
			for _, l := range p.values("--location") {
				if l.Value == "project" {
					file = litWord(".npmrc")
				}
			}
			an.pathArg(c, file, AccessWrite)
		}
	}
}
