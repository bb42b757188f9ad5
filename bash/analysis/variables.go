package analysis

import (
	"regexp"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// varBuiltin checks the builtins that take names of variables: printf
// -v, read, mapfile, wait -p and getopts set them, unset and test -v name
// them. Bash evaluates a subscript in such a name as arithmetic, running
// the command substitutions in it (read 'a[$(rm -rf ~)]' runs rm), and a
// variable set this way decides what runs as surely as an assignment does
// (read GIT_EXTERNAL_DIFF; export GIT_EXTERNAL_DIFF; git diff).
func (an *analyzer) varBuiltin(name string, args []Word, text string) {
	setOpt := func(opt byte) func(byte, Word) {
		return func(c byte, v Word) {
			if c == opt {
				an.varName(v, text, true)
			}
		}
	}
	var names []Word // operands that name variables the builtin sets
	ok := true
	switch name {
	case "printf":
		_, ok = builtinOpts(args, "v", setOpt('v'))
	case "read":
		names, ok = builtinOpts(args, "adinNptu", setOpt('a'))
	case "mapfile", "readarray":
		names, ok = builtinOpts(args, "dnOsuCc", func(c byte, _ Word) {
			if c == 'C' {
				an.problem("%q runs a callback for every line it reads (mapfile -C)", text)
			}
		})
	case "wait":
		_, ok = builtinOpts(args, "p", setOpt('p'))
	case "getopts":
		var rest []Word
		if rest, ok = builtinOpts(args, "", setOpt(0)); len(rest) > 1 {
			names = rest[1:2]
		}
	case "unset":
		var rest []Word
		rest, ok = builtinOpts(args, "", setOpt(0))
		for _, w := range rest {
			an.varName(w, text, false)
		}
	case "declare", "typeset", "local", "export", "readonly":
		// Written as a command (command export X=1, \declare …): read
		// like the declaration clause.
		an.declWords(name, args, text)
	case "test", "[":
		if name == "[" && len(args) > 0 && !args[len(args)-1].Dynamic && args[len(args)-1].Value == "]" {
			args = args[:len(args)-1]
		}
		an.testArgs(args, text)
	}
	if !ok {
		an.problem("%q: an option is only known at run time (it may name a variable)", text)
	}
	for _, w := range names {
		an.varName(w, text, true)
	}
}

// varName checks a word a builtin takes as the name of a variable: only a
// plain identifier can be analysed. When the builtin sets the variable, it
// is also checked like an assignment.
func (an *analyzer) varName(w Word, text string, sets bool) {
	switch {
	case w.Dynamic:
		an.problem("%q names a variable only known at run time", text)
	case !identRE().MatchString(w.Value):
		an.problem("%q names variable %s, which is not a plain identifier (bash evaluates a subscript in it as code)", text, quoteWord(w.Value))
	case sets:
		an.checkVar(w.Value)
	}
}

func plainName(w Word) bool { return !w.Dynamic && identRE().MatchString(w.Value) }

// builtinOpts reads a builtin's options the way bash's getopt does:
// clusters of letters, where a letter in valued takes the rest of the word,
// or the next word, as its value; "--" or the first operand ends them. It
// calls f for each option and returns the operands, or false when a word
// known only at run time stands where an option may ("$a" may be -v).
func builtinOpts(args []Word, valued string, f func(c byte, val Word)) ([]Word, bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a.Dynamic {
			return args[i:], !a.MayBeOption && !strings.HasPrefix(a.Value, "-")
		}
		v := a.Value
		switch {
		case v == "--":
			return args[i+1:], true
		case len(v) < 2 || v[0] != '-':
			return args[i:], true
		}
		for j := 1; j < len(v); j++ {
			c := v[j]
			if strings.IndexByte(valued, c) < 0 {
				f(c, Word{})
				continue
			}
			val := litWord(v[j+1:])
			if j == len(v)-1 && i+1 < len(args) {
				i++
				val = args[i]
			}
			f(c, val)
			break
		}
	}
	return nil, true
}

// testArgs checks test's operands for -v, which tests a variable: a
// subscript in its name is evaluated as code (test -v 'a[$(rm -rf ~)]').
// The operand of a literal -v must be a plain identifier. A word known
// only at run time may be -v itself, so the word after it must not be
// dynamic or hold a subscript; and an unquoted expansion may split into
// "-v name" on its own.
func (an *analyzer) testArgs(args []Word, text string) {
	for i, a := range args {
		switch {
		case a.Splits:
			an.problem("%q: an unquoted expansion in a test may become -v and a variable name (bash evaluates a subscript in it as code)", text)
			return
		case i+1 >= len(args):
		case !a.Dynamic && a.Value == "-v":
			an.varName(args[i+1], text, false)
		case a.Dynamic && (a.MayBeOption || strings.HasPrefix(a.Value, "-")):
			if next := args[i+1]; next.Dynamic || strings.ContainsRune(next.Value, '[') {
				an.problem("%q: a word known only at run time may be -v, testing a variable whose name is not a plain identifier", text)
			}
		}
	}
}

// declWords reads the words of declare, typeset, local, export or
// readonly written as a plain command (the parser reads the usual form as
// a declaration clause, see assign and declOptions).
func (an *analyzer) declWords(name string, args []Word, text string) {
	opts := true
	for _, w := range args {
		switch {
		case w.Dynamic:
			an.problem("a declaration in %q is only known at run time", text)
		case opts && w.Value == "--":
			opts = false
		case opts && len(w.Value) > 1 && (w.Value[0] == '-' || w.Value[0] == '+'):
			if w.Value[0] == '-' && name != "export" && name != "readonly" && strings.ContainsAny(w.Value[1:], "ni") {
				an.problem("%s %s: a nameref or integer variable makes later assignments impossible to follow", name, w.Value)
			}
		case identRE().MatchString(w.Value):
			an.checkVar(w.Value)
		case isAssignment(w.Value):
			an.checkVar(assignName(w.Value))
		default:
			an.problem("declaration %s is not a plain variable name (bash evaluates a subscript in a name as code)", quoteWord(w.Value))
		}
	}
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
	// Build tools and interpreters that take code or programs from the
	// environment: make --eval, go -toolexec, a C compiler for cgo, tar
	// --to-command, rustc wrappers, an interpreter's home, $SHELL for the
	// programs that spawn one, glibc's loadable converters, OpenSSL engines,
	// kubectl exec plugins, package indexes to install from.
	"MAKEFLAGS": true, "MFLAGS": true, "GNUMAKEFLAGS": true, "MAKEFILES": true,
	"GOFLAGS": true, "GOENV": true, "CC": true, "CXX": true,
	"CGO_CFLAGS": true, "CGO_CPPFLAGS": true, "CGO_CXXFLAGS": true, "CGO_FFLAGS": true, "CGO_LDFLAGS": true,
	"TAR_OPTIONS": true, "RUSTC": true, "RUSTC_WRAPPER": true, "RUSTC_WORKSPACE_WRAPPER": true, "RUSTFLAGS": true,
	"CARGO_BUILD_RUSTC": true, "CARGO_BUILD_RUSTC_WRAPPER": true, "PYTHONHOME": true, "PYTHONWARNINGS": true,
	"SHELL": true, "GCONV_PATH": true, "LOCPATH": true, "OPENSSL_CONF": true, "KUBECONFIG": true,
	"PIP_INDEX_URL": true, "PIP_EXTRA_INDEX_URL": true,
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
		// Also "export NAME" and "declare NAME" without a value: the
		// value may have been set by read or printf -v.
		an.checkVar(a.Name.Value)
		return
	}
	if a.Naked && a.Value != nil { // export "$X", declare "A=1", declare -n
		w := an.word(a.Value)
		switch {
		case w.Dynamic:
			an.problem("a declaration is only known at run time")
		case strings.HasPrefix(w.Value, "-") || strings.HasPrefix(w.Value, "+"):
			// An option: declOptions reads it.
		case identRE().MatchString(w.Value):
			an.checkVar(w.Value)
		case isAssignment(w.Value):
			an.checkVar(assignName(w.Value))
		default:
			// declare 'a[$(rm -rf ~)]=1' evaluates the subscript.
			an.problem("declaration %s is not a plain variable name (bash evaluates a subscript in a name as code)", quoteWord(w.Value))
		}
	}
}

// declOptions reads the options of declare, typeset and local. A nameref
// (-n) makes assigning one name set another (declare -n r=PATH; r=/tmp),
// and the integer attribute (-i) makes every later assignment arithmetic,
// whose subscripts bash evaluates as code: neither can be followed by
// reading the line.
func (an *analyzer) declOptions(d *syntax.DeclClause) {
	switch d.Variant.Value {
	case "declare", "typeset", "local":
	default:
		return
	}
	for _, a := range d.Args {
		if !a.Naked || a.Name != nil || a.Value == nil {
			continue
		}
		w := an.word(a.Value)
		if w.Dynamic || w.Value == "--" || !strings.HasPrefix(w.Value, "-") {
			continue // assign reports dynamic words and names
		}
		if strings.ContainsAny(w.Value[1:], "ni") {
			an.problem("%s %s: a nameref or integer variable makes later assignments impossible to follow", d.Variant.Value, w.Value)
		}
	}
}

var numberRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([0-9]+|0[xX][0-9a-fA-F]+|[0-9]+#[0-9a-zA-Z@_]+)$`)
})

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
			if lit == "" || !numberRE().MatchString(lit) {
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

// test flags [[ a -eq b ]], whose operands are arithmetic, and
// [[ -v name ]] unless name is a plain identifier (a subscript in it is
// arithmetic too).
func (an *analyzer) test(x syntax.TestExpr) {
	syntax.Walk(x, func(n syntax.Node) bool {
		if u, ok := n.(*syntax.UnaryTest); ok && u.Op == syntax.TsVarSet {
			if w, ok := u.X.(*syntax.Word); !ok || !plainName(an.word(w)) {
				an.problem("[[ -v ]] tests a variable whose name is not a plain identifier (bash evaluates a subscript in it as code)")
			}
		}
		if b, ok := n.(*syntax.BinaryTest); ok {
			switch b.Op {
			case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
				for _, side := range []syntax.TestExpr{b.X, b.Y} {
					if w, ok := side.(*syntax.Word); ok {
						if lit := w.Lit(); lit == "" || !numberRE().MatchString(lit) {
							an.problem("arithmetic on values known only at run time (bash evaluates them as code)")
						}
					}
				}
			}
		}
		return true
	})
}
