package analysis

import (
	"strings"
)

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
	// configs are the values of -c (key=value); configEnv the keys
	// --config-env sets from the environment.
	configs   []Word
	configEnv []string
	// dirs are the directories -C, --git-dir and --work-tree name.
	dirs []Word
}

func readGitGlobals(args []Word) gitCommand {
	g := gitCommand{sub: len(args)}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a.Dynamic || !strings.HasPrefix(a.Value, "-") {
			g.sub, g.dyn = i, a.Dynamic
			return g
		}
		opt, eqVal, eq := strings.Cut(a.Value, "=")
		val := litWord(eqVal)
		switch {
		case a.Value == "--help" || a.Value == "-h":
			g.sub, g.name = i, "help"
			return g
		case a.Value == "--version" || a.Value == "-v":
			g.sub, g.name = i, "version"
			return g
		case eq && gitGlobalEq[opt]:
		case !eq && gitGlobalNext[opt]:
			val = Word{}
			if i+1 < len(args) {
				i++
				val = args[i]
			}
		case !eq && gitGlobalFlags[opt]:
		default:
			g.unknown = true
		}
		switch opt {
		case "-c":
			g.configs = append(g.configs, val)
		case "--config-env":
			key, _, _ := strings.Cut(val.Value, "=")
			g.configEnv = append(g.configEnv, key)
		case "-C", "--git-dir", "--work-tree":
			g.dirs = append(g.dirs, val)
		}
		switch opt {
		case "-c", "--config-env":
			g.config = true
			key, _, _ := strings.Cut(strings.ToLower(val.Value), "=")
			if val.Dynamic || strings.HasPrefix(key, "alias.") || strings.HasPrefix(key, "include.") || strings.HasPrefix(key, "includeif.") {
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
func (an *analyzer) gitViews(v View, text string) []View {
	args := v.Words[1:]
	g := readGitGlobals(args)
	if g.redefines {
		an.problem("%q sets git configuration that can redefine its subcommands (alias.*, include.*)", text)
	}
	var out []View
	if g.sub > 0 || g.name != "" {
		rest := args[g.sub:]
		words := make([]Word, 0, 2+len(rest))
		words = append(words, v.Words[0])
		if g.name != "" {
			words = append(words, Word{Value: g.name})
			rest = rest[1:]
		}
		out = append(out, View{Words: append(words, rest...), Open: v.Open})
	}
	if g.unknown {
		out = append(out, View{Words: []Word{v.Words[0], {Dynamic: true}}, Open: true})
	}
	return out
}

// gitCommandKey reports whether a git configuration key (lower-cased)
// names a program or command line git runs.
func gitCommandKey(key string) bool {
	switch key {
	case "core.sshcommand", "core.pager", "core.editor", "core.fsmonitor", "core.askpass", "core.gitproxy",
		"core.alternaterefscommand", "diff.external", "sequence.editor", "gpg.program", "web.browser", "credential.helper",
		"uploadpack.packobjectshook", "instaweb.httpd", "imap.tunnel", "sendemail.tocmd", "sendemail.cccmd",
		"sendemail.smtpserver", "interactive.difffilter", "core.hookspath", "receive.procreceiverefs":
		return true
	}
	for _, suffix := range []string{".command", ".textconv", ".driver", ".clean", ".smudge", ".process", ".cmd",
		".program", ".helper", ".uploadpack", ".receivepack", ".path", ".update"} {
		if strings.HasSuffix(key, suffix) {
			return true
		}
	}
	return strings.HasPrefix(key, "pager.") || strings.HasPrefix(key, "alias.")
}

// gitTreeWriters are the subcommands that rewrite files of the working
// tree.
var gitTreeWriters = map[string]bool{
	"checkout": true, "restore": true, "rm": true, "mv": true, "switch": true, "clean": true, "reset": true, "stash": true,
	"merge": true, "pull": true, "rebase": true, "cherry-pick": true, "revert": true, "am": true, "apply": true,
}

// gitReadSubs are the subcommands whose operands are files they read
// (or revisions, which name no file).
var gitReadSubs = map[string]bool{
	"diff": true, "log": true, "show": true, "blame": true, "annotate": true, "grep": true, "whatchanged": true,
	"diff-tree": true, "diff-files": true, "diff-index": true, "ls-files": true, "status": true, "shortlog": true,
	"format-patch": true, "range-diff": true, "add": true, "apply": true, "am": true, "check-ignore": true, "check-attr": true,
}

// gitRiskySubs are the subcommands with options that run programs or
// write files (--output, --ext-diff, --exec, --upload-pack, -O, …).
var gitRiskySubs = map[string]bool{
	"diff": true, "log": true, "show": true, "whatchanged": true, "diff-tree": true, "diff-files": true, "diff-index": true,
	"format-patch": true, "range-diff": true, "grep": true, "rebase": true, "fetch": true, "pull": true, "clone": true,
	"ls-remote": true, "archive": true, "push": true, "config": true, "difftool": true, "mergetool": true, "filter-branch": true,
	"send-email": true, "submodule": true, "bisect": true, "blame": true, "annotate": true, "help": true,
}

// gitGrammar reads the options of git's subcommands: parse-options takes
// abbreviated long options, "--opt value" for options that take one, and
// short option clusters.
var gitGrammar = grammar{valued: "oxFtucmeGABf", optional: "OCS", long: []string{"--output", "--exec", "--extcmd", "--tool", "--upload-pack",
	"--receive-pack", "--file", "--template", "--message", "--output-directory", "--directory", "--open-files-in-pager",
	"--to-cmd", "--cc-cmd", "--header-cmd", "--smtp-server", "--env-filter", "--tree-filter", "--index-filter", "--parent-filter",
	"--msg-filter", "--commit-filter", "--tag-name-filter", "--config", "--separate-git-dir", "--reference", "--origin", "--branch",
	"--depth", "--format", "--pretty", "--author", "--since", "--until", "--grep", "--date", "--remote", "--prefix", "--worktree-attributes"}}

// examineGit reads a git command: configuration given with -c that names a
// program (core.pager, core.fsmonitor, diff.external, …: its command line
// is read as a command of the line), the directories -C and --git-dir
// name (whose configuration and hooks git runs), and the subcommands'
// options that write files or run commands.
func examineGit(an *analyzer, c *Command, x *invocation) {
	g := readGitGlobals(x.args)
	for _, d := range g.dirs {
		an.pathArg(c, d, AccessDir)
	}
	for _, kv := range g.configs {
		key, val, _ := strings.Cut(kv.Value, "=")
		key = strings.ToLower(key)
		if !gitCommandKey(key) || kv.Dynamic {
			continue
		}
		val = strings.TrimPrefix(val, "!")
		if key == "core.hookspath" || strings.HasSuffix(key, ".path") {
			c.Hidden = append(c.Hidden, "-c "+key+" makes git run programs from "+quoteWord(val))
			continue
		}
		an.runs(c, "-c "+key, litWord(val), x.depth)
	}
	for _, key := range g.configEnv {
		if gitCommandKey(strings.ToLower(key)) {
			c.Hidden = append(c.Hidden, "--config-env sets "+key+", a program git runs, from the environment")
		}
	}
	if g.sub >= len(x.args) || g.dyn {
		return
	}
	sub := x.args[g.sub].Value
	if g.name != "" {
		sub = g.name
	}
	rest := x.args[g.sub+1:]
	if g.name != "" {
		rest = x.args[g.sub:]
		if len(rest) > 0 {
			rest = rest[1:]
		}
	}
	p := gitGrammar.read(rest)
	if p.dynamic && gitRiskySubs[sub] {
		c.Hidden = append(c.Hidden, "an argument known only at run time may be an option that runs a program or writes a file")
	}
	for _, o := range p.values("--output", "-o", "--output-directory") {
		switch sub {
		case "diff", "log", "show", "whatchanged", "diff-tree", "diff-files", "diff-index", "format-patch", "range-diff", "archive", "blame":
			an.pathArg(c, o, AccessWrite)
		}
	}
	for _, o := range p.opts {
		if strings.HasPrefix("--output", o.name) && len(o.name) >= 5 && o.name != "--output" && o.has {
			an.pathArg(c, o.value, AccessWrite) // --outp=F abbreviates --output
		}
	}
	runs := func(names ...string) {
		for _, v := range p.values(names...) {
			an.runs(c, names[0], v, x.depth)
		}
	}
	switch sub {
	case "diff", "log", "show", "whatchanged", "diff-tree", "diff-files", "diff-index", "format-patch", "range-diff":
		if p.given("--ext-diff") {
			c.Hidden = append(c.Hidden, "--ext-diff runs the configured external diff program")
		}
		for _, f := range p.values("-O") {
			an.pathArg(c, f, AccessRead)
		}
	case "grep":
		if p.has("-O") || p.given("--open-files-in-pager") {
			c.Hidden = append(c.Hidden, "-O opens the files found in a pager (a program)")
			runs("-O", "--open-files-in-pager")
		}
	case "rebase":
		runs("-x", "--exec")
		if p.has("-i") || p.given("--interactive") {
			c.Hidden = append(c.Hidden, "rebase -i runs the sequence editor")
		}
	case "bisect":
		if len(p.operands) > 1 && p.operands[0].Value == "run" {
			an.simple(p.operands[1:], "", x.depth+1)
			c.Hidden = append(c.Hidden, "bisect run runs "+JoinWords(p.operands[1:]))
		}
	case "submodule":
		for i, o := range p.operands {
			if o.Value == "foreach" && i+1 < len(p.operands) {
				an.runs(c, "foreach", joinedWord(p.operands[i+1:]), x.depth)
				break
			}
		}
		if len(p.operands) > 0 {
			switch p.operands[0].Value {
			case "add", "init", "set-url", "set-branch", "sync", "deinit":
				an.pathArg(c, litWord(".git/config"), AccessWrite) // and .gitmodules
				an.pathArg(c, litWord(".gitmodules"), AccessWrite)
			}
		}
	case "difftool", "mergetool":
		c.Hidden = append(c.Hidden, sub+" runs a configured or chosen tool")
		runs("-x", "--extcmd")
	case "filter-branch":
		runs("--env-filter", "--tree-filter", "--index-filter", "--parent-filter", "--msg-filter", "--commit-filter", "--tag-name-filter")
	case "send-email":
		runs("--to-cmd", "--cc-cmd", "--header-cmd")
		for _, v := range p.values("--smtp-server") {
			if strings.HasPrefix(v.Value, "/") {
				an.runs(c, "--smtp-server", v, x.depth)
			}
		}
	case "fetch", "pull", "clone", "ls-remote", "archive", "push":
		runs("--upload-pack", "--receive-pack", "--exec")
		if sub == "clone" {
			runs("-u")
			for _, kv := range p.values("-c", "--config") {
				key, val, _ := strings.Cut(kv.Value, "=")
				if gitCommandKey(strings.ToLower(key)) {
					an.runs(c, "--config "+key, litWord(strings.TrimPrefix(val, "!")), x.depth)
				}
			}
			if len(p.operands) > 1 {
				an.pathArg(c, p.operands[1], AccessWrite)
			}
		}
		if sub == "clone" || sub == "fetch" || sub == "pull" {
			if len(p.values("--template")) > 0 {
				c.Hidden = append(c.Hidden, "--template installs hooks from a template directory")
			}
		}
	case "init":
		if len(p.values("--template")) > 0 {
			c.Hidden = append(c.Hidden, "--template installs hooks from a template directory")
		}
		an.pathArgs(c, p.operands, AccessWrite)
	case "worktree":
		if len(p.operands) > 1 && p.operands[0].Value == "add" {
			an.pathArg(c, p.operands[1], AccessWrite)
		}
	case "config":
		examineGitConfig(an, c, &p, x.depth)
	case "remote", "branch":
		// Commands that change the repository's configuration.
		writes := false
		if len(p.operands) > 0 {
			switch op := p.operands[0].Value; sub {
			case "remote":
				writes = op != "show" && op != "get-url"
			case "submodule":
				writes = op == "add" || op == "init" || op == "set-url" || op == "set-branch" || op == "sync" || op == "deinit"
			}
		}
		if sub == "branch" {
			writes = p.has("-u") || p.given("--set-upstream-to", "--unset-upstream", "--edit-description", "--track")
		}
		if writes {
			an.pathArg(c, litWord(".git/config"), AccessWrite)
		}

	case "commit", "tag", "notes", "merge":
		for _, f := range p.values("-F", "--file", "-t", "--template") {
			an.pathArg(c, f, AccessRead)
		}
	case "help":
		if p.has("-w", "-i") || p.given("--web", "--info") {
			c.Hidden = append(c.Hidden, "help -w and -i open a browser or info viewer")
		}
	case "hook", "instaweb":
		c.Hidden = append(c.Hidden, "git "+sub+" runs configured programs")
	}
	if gitTreeWriters[sub] {
		// They rewrite files of the working tree: the paths named, or
		// any of them.
		from := len(c.Paths)
		switch {
		case sub == "reset" && !p.given("--hard", "--merge", "--keep"), sub == "stash" && len(p.operands) > 0 &&
			(p.operands[0].Value == "list" || p.operands[0].Value == "show"):
		case (sub == "checkout" || sub == "restore" || sub == "rm" || sub == "mv") && len(p.operands) > 0:
			an.pathArgs(c, p.operands, AccessWrite)
		default:
			an.pathArg(c, litWord("."), AccessWrite)
		}
		recursive(c, from)
	}
	if gitReadSubs[sub] {
		for _, o := range p.operands {
			if rev, file, ok := strings.Cut(o.Value, ":"); ok && !strings.Contains(rev, "/") && !o.Dynamic {
				an.pathArg(c, litWord(strings.TrimPrefix(file, "/")), AccessRead) // HEAD:path, :path
				continue
			}
			an.pathArg(c, o, AccessRead)
		}
	}
}

// examineGitConfig: git config changes the repository's configuration
// (.git/config) unless it only reads (--get, --list, …), or another file
// (--global, --system, --file); a value for a key that names a program is
// read as a command of the line.
func examineGitConfig(an *analyzer, c *Command, p *parsedArgs, depth int) {
	ops := p.operands
	if len(ops) > 0 {
		switch ops[0].Value { // git 2.46's subcommands
		case "get", "list", "get-color", "get-colorbool":
			return
		case "set", "unset", "rename-section", "remove-section", "edit":
			ops = ops[1:]
		}
	}
	if p.given("--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "--get-color", "--get-colorbool", "--show-origin", "--show-scope") || p.has("-l") {
		return
	}
	file := litWord(".git/config")
	switch {
	case p.given("--global"):
		file = litWord("~/.gitconfig")
		file.Tilde, file.Home = true, true
	case p.given("--system"):
		file = litWord("/etc/gitconfig")
	case len(p.values("-f", "--file")) > 0:
		file = p.values("-f", "--file")[0]
	}
	an.pathArg(c, file, AccessWrite)
	if len(ops) >= 2 && !ops[0].Dynamic && gitCommandKey(strings.ToLower(ops[0].Value)) {
		an.runs(c, ops[0].Value, Word{Value: strings.TrimPrefix(ops[1].Value, "!"), Dynamic: ops[1].Dynamic}, depth)
	}
}
