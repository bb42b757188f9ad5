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
