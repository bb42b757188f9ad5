package permission

import (
	"regexp"
	"strings"
)

// Plan mode runs only commands known to change nothing. The list is
// deliberately short and conservative: a command missing from it is refused
// in plan mode (the model uses the read and search tools instead), while a
// command wrongly on it could change state while the user believes nothing
// can. Options that turn a reader into a writer (sort -o, sed -i, find
// -delete, git branch -D) are checked.

type roCheck func(args []word) bool

func always([]word) bool { return true }

// noneOf is read-only unless one of the options appears (exactly, or as
// "opt=value", or with the value attached to a short option).
func noneOf(opts ...string) roCheck {
	return func(args []word) bool {
		for _, a := range args {
			for _, o := range opts {
				if a.val == o || strings.HasPrefix(a.val, o+"=") || (len(o) == 2 && o[0] == '-' && o[1] != '-' && strings.HasPrefix(a.val, o) && !strings.HasPrefix(a.val, "--")) {
					return false
				}
			}
		}
		return true
	}
}

// positional counts the arguments that are not options.
func positional(args []word) int {
	n := 0
	for _, a := range args {
		if !strings.HasPrefix(a.val, "-") {
			n++
		}
	}
	return n
}

var readOnlyCommands map[string]roCheck

func init() {
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
		"fgrep": always, "rg": always, "ps": always, "uptime": always, "free": always,
		"nproc": always, "arch": always, "uname": always, "whoami": always, "id": always,
		"groups": always, "tty": always, "locale": always, "printenv": always, "getconf": always,
		"cut": always, "tr": always, "base64": always, "cd": always, "pushd": always, "popd": always,
		"dirs": always, "sleep": always, ":": always, "env": always, "man": always, "help": always,
		"sort": noneOf("-o", "--output"),
		"tree": noneOf("-o"),
		"xxd":  noneOf("-r", "-revert"),
		"date": noneOf("-s", "--set"),
		"uniq": func(args []word) bool { return positional(args) <= 1 },
		"hostname": func(args []word) bool {
			return positional(args) == 0 && noneOf("-F", "--file", "-b", "--boot")(args)
		},
		"find": noneOf("-delete", "-fprint", "-fprint0", "-fprintf", "-fls"),
		"sed":  sedReadOnly,
		"git":  gitReadOnly,
		"go":   goReadOnly,
	}
}

func readOnlyView(v view) bool {
	if len(v.words) == 0 {
		return true
	}
	if v.words[0].dyn {
		return false
	}
	check, ok := readOnlyCommands[v.words[0].val]
	return ok && check(v.words[1:])
}

// sedScriptRE accepts scripts made only of printing, deleting and quitting
// commands with line addresses ("1,20p", "$p", "10q") or a substitution
// without the w and e flags; anything else (w file, e command, r file) is
// not read-only.
var sedScriptRE = regexp.MustCompile(`^(([0-9$,;!\s]|/[^/]*/)*[pdqnP=]?\s*;?\s*)+$|^s/[^/]*/[^/]*/[gpiI0-9]*$`)

func sedReadOnly(args []word) bool {
	script := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a.dyn:
			return false
		case a.val == "-i" || strings.HasPrefix(a.val, "--in-place") || (strings.HasPrefix(a.val, "-") && !strings.HasPrefix(a.val, "--") && strings.ContainsRune(a.val, 'i')):
			return false
		case a.val == "-f" || strings.HasPrefix(a.val, "--file"):
			return false
		case a.val == "-e" || a.val == "--expression":
			if i+1 >= len(args) || !sedScriptRE.MatchString(args[i+1].val) {
				return false
			}
			script = true
			i++
		case strings.HasPrefix(a.val, "-"):
		case !script:
			if !sedScriptRE.MatchString(a.val) {
				return false
			}
			script = true
		}
	}
	return true
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

func gitReadOnly(args []word) bool {
	i := 0
	for i < len(args) {
		a := args[i].val
		switch {
		case args[i].dyn:
			return false
		case a == "-c" || a == "--config-env" || strings.HasPrefix(a, "--exec-path"):
			return false // configuration can name programs to run
		case a == "-C" || a == "--git-dir" || a == "--work-tree" || a == "--namespace":
			i += 2
			continue
		case strings.HasPrefix(a, "-"):
			i++
			continue
		}
		break
	}
	if i >= len(args) {
		return true
	}
	sub, rest := args[i].val, args[i+1:]
	for _, r := range rest {
		if r.dyn || strings.HasPrefix(r.val, "--output") || r.val == "--ext-diff" {
			return false
		}
	}
	if gitReadOnlySub[sub] {
		return true
	}
	switch sub {
	case "branch":
		return allOptions(rest, "-a", "-r", "-l", "-v", "-vv", "--list", "--all", "--remotes", "--show-current", "--verbose", "--no-color", "--color")
	case "tag":
		return len(rest) == 0 || rest[0].val == "-l" || rest[0].val == "--list"
	case "remote":
		return len(rest) == 0 || rest[0].val == "-v" || rest[0].val == "show" || rest[0].val == "get-url"
	case "stash":
		return len(rest) > 0 && (rest[0].val == "list" || rest[0].val == "show")
	case "worktree":
		return len(rest) > 0 && rest[0].val == "list"
	case "reflog":
		return len(rest) == 0 || rest[0].val == "show"
	case "config":
		return hasOption(rest, "--get", "--get-all", "--get-regexp", "--list", "-l") &&
			!hasOption(rest, "--add", "--unset", "--unset-all", "--replace-all", "--edit", "-e", "--rename-section", "--remove-section")
	}
	return false
}

func allOptions(args []word, allowed ...string) bool {
	for _, a := range args {
		ok := false
		for _, o := range allowed {
			if a.val == o || strings.HasPrefix(a.val, "--sort=") || strings.HasPrefix(a.val, "--format=") {
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

func goReadOnly(args []word) bool {
	if len(args) == 0 {
		return true
	}
	switch args[0].val {
	case "version", "list", "doc", "help":
		return true
	case "env":
		return !hasOption(args[1:], "-w", "-u")
	}
	return false
}
