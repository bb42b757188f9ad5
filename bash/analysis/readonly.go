package analysis

import (
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Plan mode runs only commands known to change nothing. The list is
// deliberately short and conservative: a command missing from it is refused
// in plan mode (the model uses the read and search tools instead), while a
// command wrongly on it could change state while the user believes nothing
// can. Options that turn a reader into a writer (sort -o, sed -i, find
// -delete, git branch -D) are checked.

type roCheck func(args []Word) bool

func always([]Word) bool { return true }

// noneOf is read-only unless one of the options appears: exactly, as
// "opt=value", abbreviated as GNU tools accept (sort --out=f is sort
// --output=f), or as a letter of a cluster of short options (sort -uo f).
// The letters in valued take a value, the rest of the word, which ends the
// cluster (date -Iseconds is not date -s); with valued empty, a forbidden
// letter anywhere in a cluster counts.
func noneOf(valued string, opts ...string) roCheck {
	return func(args []Word) bool {
		for _, a := range args {
			v := a.Value
			for _, o := range opts {
				if v == o || strings.HasPrefix(v, o+"=") || strings.HasPrefix(o, "--") && abbreviates(v, o) {
					return false
				}
			}
			if len(v) < 2 || v[0] != '-' || v[1] == '-' {
				continue
			}
			for j := 1; j < len(v); j++ {
				if slices.Contains(opts, "-"+v[j:j+1]) {
					return false
				}
				if strings.IndexByte(valued, v[j]) >= 0 {
					break
				}
			}
		}
		return true
	}
}

// positional counts the arguments that are not options.
func positional(args []Word) int {
	n := 0
	for _, a := range args {
		if !strings.HasPrefix(a.Value, "-") {
			n++
		}
	}
	return n
}

var readOnlyCommands map[string]roCheck

// loadReadOnly fills readOnlyCommands when a command is first checked.
var loadReadOnly = sync.OnceFunc(initReadOnly)

func initReadOnly() {
	readOnlyCommands = map[string]roCheck{
		"ls": always, "cat": always, "head": always, "tail": always, "wc": always, "pwd": always,
		"echo": always, "printf": always, "which": always, "whereis": always, "type": always,
		"file": always, "stat": always, "du": always, "df": always, "basename": always,
		"dirname": always, "realpath": always, "readlink": always, "diff": always, "cmp": always,
		"comm": always, "jq": always, "true": always, "false": always, "test": always, "[": always,
		"seq": always, "md5sum": always, "sha1sum": always, "sha256sum": always, "sha512sum": always,
		"cksum": always, "b2sum": always, "nl": always, "od": always, "hexdump": always,
		"strings": always, "rev": always, "tac": always, "paste": always, "fold": always,
		"column": always, "expand": always, "unexpand": always, "grep": always, "egrep": always,
		"fgrep": always, "ps": always, "uptime": always, "free": always,
		"nproc": always, "arch": always, "uname": always, "whoami": always, "id": always,
		"groups": always, "tty": always, "locale": always, "printenv": always, "getconf": always,
		"cut": always, "tr": always, "base64": always, "cd": always, "pushd": always, "popd": always,
		"dirs": always, "sleep": always, ":": always, "env": always, "help": always,
		// --compress-program runs a program on sort's temporary files.
		"sort": noneOf("kotST", "-o", "--output", "--compress-program"),
		"tree": noneOf("", "-o"),
		"xxd":  xxdReadOnly,
		"date": noneOf("dfrI", "-s", "--set"),
		"uniq": func(args []Word) bool { return positional(args) <= 1 },
		"hostname": func(args []Word) bool {
			return positional(args) == 0 && noneOf("", "-F", "--file", "-b", "--boot")(args)
		},
		"find": noneOf("", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"),
		// rg --pre and man's pager and browser run programs.
		"rg": noneOf("", "--pre"),
		// man -C reads a configuration file that names the programs man
		// runs (a repository can hold one); -X runs an X viewer.
		"man": noneOf("", "-P", "--pager", "-H", "--html", "-C", "--config-file", "-X", "--gxditview"),
		"sed": sedReadOnly,
		"git": gitReadOnly,
		"go":  goReadOnly,
	}
}

func readOnlyView(v View) bool {
	if len(v.Words) == 0 {
		return true
	}
	if v.Words[0].Dynamic {
		return false
	}
	loadReadOnly()
	check, ok := readOnlyCommands[v.Words[0].Value]
	return ok && check(v.Words[1:])
}

// sedScriptRE accepts scripts made only of printing, deleting and quitting
// commands with line addresses ("1,20p", "$p", "10q") or a substitution
// without the w and e flags; anything else (w file, e command, r file) is
// not read-only.
var sedScriptRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(([0-9$,;!\s]|/[^/]*/)*[pdqnP=]?\s*;?\s*)+$|^s/[^/]*/[^/]*/[gpiI0-9]*$`)
})

// sedLong are GNU sed's long options, and whether each takes a value
// (--in-place's is optional, after "=" only).
var sedLong = map[string]bool{
	"--quiet": false, "--silent": false, "--debug": false, "--expression": true, "--file": true,
	"--follow-symlinks": false, "--in-place": false, "--line-length": true, "--null-data": false,
	"--zero-terminated": false, "--posix": false, "--regexp-extended": false, "--separate": false,
	"--sandbox": false, "--unbuffered": false, "--binary": false, "--help": false, "--version": false,
}

// sedReadOnly reads sed's options as its getopt does (anywhere on the
// line, long ones abbreviated, short ones in clusters: -ne'w f') and checks
// every script: each -e and --expression, or else the first operand. A
// script file (-f, --file) is not read, so it is not read-only, nor is
// editing in place (-i, --in-place).
func sedReadOnly(args []Word) bool {
	const flags = "bsnrzuE" // short options without a value
	scripts := 0
	first := "" // the first operand: the script when no -e gives one
	operands := false
	script := func(s string) bool {
		scripts++
		return sedScriptRE().MatchString(s)
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		v := a.Value
		switch {
		case a.Dynamic:
			return false
		case v == "--":
			for _, o := range args[i+1:] {
				if o.Dynamic {
					return false
				}
			}
			if !operands && i+1 < len(args) {
				first, operands = args[i+1].Value, true
			}
			i = len(args)
		case strings.HasPrefix(v, "--"):
			name, val, eq := strings.Cut(v, "=")
			opt, ok := longOption(name, sedLong)
			if !ok || opt == "--in-place" || opt == "--file" {
				return false
			}
			if sedLong[opt] && !eq {
				if i++; i >= len(args) || args[i].Dynamic {
					return false
				}
				val = args[i].Value
			}
			if opt == "--expression" && !script(val) {
				return false
			}
		case len(v) > 1 && v[0] == '-':
			for j := 1; j < len(v); j++ {
				c := v[j]
				if c == 'e' || c == 'l' {
					val := v[j+1:]
					if val == "" {
						if i++; i >= len(args) || args[i].Dynamic {
							return false
						}
						val = args[i].Value
					}
					if c == 'e' && !script(val) {
						return false
					}
					break
				}
				if strings.IndexByte(flags, c) < 0 {
					return false // -i, -f, or an option this check does not know
				}
			}
		case !operands:
			first, operands = v, true
		}
	}
	if scripts == 0 {
		return operands && sedScriptRE().MatchString(first)
	}
	return true
}

// xxdReadOnly: xxd -r writes binary, and a second operand is the file xxd
// writes to. xxd reads its own options: any word starting with -r is
// -revert; -c, -g, -l, -n, -o and -s take the next word as a value unless
// it is attached.
func xxdReadOnly(args []Word) bool {
	files := 0
	for i := 0; i < len(args); i++ {
		v := args[i].Value
		switch {
		case args[i].Dynamic:
			return false
		case strings.HasPrefix(v, "-r"):
			return false
		case slices.Contains([]string{"-c", "-cols", "-g", "-groupsize", "-l", "-len", "-n", "-name", "-o", "-offset", "-s", "-seek"}, v):
			i++
		case len(v) > 1 && v[0] == '-':
		default:
			files++
		}
	}
	return files <= 1
}

// gitReadOnlySub are subcommands that only read, whatever their arguments
// (apart from --output, checked separately).
var gitReadOnlySub = map[string]bool{
	"status": true, "diff": true, "log": true, "show": true, "blame": true, "annotate": true,
	"ls-files": true, "ls-tree": true, "rev-parse": true, "rev-list": true, "describe": true,
	"grep": true, "shortlog": true, "cat-file": true, "merge-base": true, "name-rev": true,
	"for-each-ref": true, "show-ref": true, "count-objects": true, "var": true, "help": true,
	"version": true, "whatchanged": true, "diff-tree": true, "diff-files": true, "diff-index": true,
	"check-ignore": true, "check-attr": true, "verify-commit": true, "verify-tag": true,
}

// gitReadOnly reads the global options as git does (readGitGlobals), so
// that git --shallow-file log push is known to push. Configuration (-c,
// --config-env) can name programs to run, and an option git does not
// know may hide the subcommand.
func gitReadOnly(args []Word) bool {
	g := readGitGlobals(args)
	if g.dyn || g.unknown || g.config || g.execPath {
		return false
	}
	if g.sub >= len(args) {
		return true
	}
	sub, rest := args[g.sub].Value, args[g.sub+1:]
	if g.name != "" {
		sub = g.name
	}
	for _, r := range rest {
		if r.Dynamic || strings.HasPrefix(r.Value, "--output") || abbreviates(r.Value, "--output", "--ext-diff") {
			return false
		}
	}
	if sub == "grep" && !gitGrepReadOnly(rest) {
		return false
	}
	if gitReadOnlySub[sub] {
		return true
	}
	switch sub {
	case "branch":
		return allOptions(rest, "-a", "-r", "-l", "-v", "-vv", "--list", "--all", "--remotes", "--show-current", "--verbose", "--no-color", "--color")
	case "tag":
		// Listing only: no option that creates, deletes or signs a tag,
		// and a pattern only with -l.
		p := gitGrammar.read(rest)
		if p.has("-d", "-a", "-s", "-u", "-m", "-F", "-f", "-e") || p.given("--delete", "--annotate", "--sign", "--local-user",
			"--message", "--file", "--force", "--edit", "--create-reflog", "--cleanup", "--trailer") {
			return false
		}
		return len(p.operands) == 0 || p.has("-l") || p.given("--list")
	case "remote":
		// git remote [-v] [show|get-url …]: any other subcommand changes
		// the configuration (add, rename, remove, set-url, prune, update).
		p := gitGrammar.read(rest)
		return len(p.operands) == 0 || p.operands[0].Value == "show" || p.operands[0].Value == "get-url"
	case "stash":
		return len(rest) > 0 && (rest[0].Value == "list" || rest[0].Value == "show")
	case "worktree":
		return len(rest) > 0 && rest[0].Value == "list"
	case "reflog":
		return len(rest) == 0 || rest[0].Value == "show"
	case "config":
		return hasOption(rest, "--get", "--get-all", "--get-regexp", "--list", "-l") &&
			!hasOption(rest, "--add", "--unset", "--unset-all", "--replace-all", "--edit", "-e", "--rename-section", "--remove-section")
	}
	return false
}

// gitGrepReadOnly refuses git grep -O (--open-files-in-pager), which runs
// a program, the pager or the one it names (-O<cmd>, --open-files-in-pager=cmd),
// on the files found. -O may end a cluster of short options (-nO<cmd>);
// the options in gitGrepValued take a value, which ends the cluster.
func gitGrepReadOnly(args []Word) bool {
	const gitGrepValued = "ABCefm"
	for i := 0; i < len(args); i++ {
		v := args[i].Value
		switch {
		case v == "--":
			return true
		case abbreviates(v, "--open-files-in-pager"):
			return false
		case len(v) > 1 && v[0] == '-' && v[1] != '-':
			for j := 1; j < len(v); j++ {
				if v[j] == 'O' {
					return false
				}
				if strings.IndexByte(gitGrepValued, v[j]) >= 0 {
					if j == len(v)-1 {
						i++
					}
					break
				}
			}
		}
	}
	return true
}

// abbreviates reports whether arg is one of the long options opts, or an
// abbreviation of one (GNU getopt_long and git's parse-options accept any
// unambiguous prefix: sort --out=f is sort --output=f), with or without
// "=value". An ambiguous prefix counts too: the tool refuses it anyway.
func abbreviates(arg string, opts ...string) bool {
	if len(arg) < 3 || !strings.HasPrefix(arg, "--") {
		return false
	}
	name, _, _ := strings.Cut(arg, "=")
	for _, o := range opts {
		if strings.HasPrefix(o, name) {
			return true
		}
	}
	return false
}

func allOptions(args []Word, allowed ...string) bool {
	for _, a := range args {
		ok := false
		for _, o := range allowed {
			if a.Value == o || strings.HasPrefix(a.Value, "--sort=") || strings.HasPrefix(a.Value, "--format=") {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func goReadOnly(args []Word) bool {
	if len(args) == 0 {
		return true
	}
	g := grammar{style: goStyle, long: goValued}
	p := g.read(args[1:])
	if p.dynamic {
		return false
	}
	switch args[0].Value {
	case "version", "doc", "help":
		return true
	case "list":
		// -mod=mod updates go.mod and go.sum; -toolexec and -exec are
		// commands of the line (and make it not read-only themselves).
		for _, m := range p.values("-mod") {
			if m.Value != "readonly" && m.Value != "vendor" {
				return false
			}
		}
		return !p.has("-toolexec", "-exec", "-modfile", "-o", "-pgo", "-overlay")
	case "env":
		return !p.has("-w", "-u") // also --w and -w=true: Go's flag syntax
	}
	return false
}
