package analysis

import (
	"strings"
)

// eval runs its arguments joined by spaces as a command line (after a
// first "--", which ends eval's options: eval -- 'rm x' runs rm).
func (an *analyzer) eval(args []Word, text string, depth int) {
	if len(args) > 0 && !args[0].Dynamic && args[0].Value == "--" {
		args = args[1:]
	}
	parts := make([]string, len(args))
	for i, a := range args {
		if a.Dynamic {
			an.problem("%q evaluates a string known only at run time", text)
			return
		}
		parts[i] = a.Value
	}
	an.script(strings.Join(parts, " "), depth+1)
}

// trap's first operand is a command line run later (also after "--":
// trap -- 'rm x' EXIT). With -l or -p it prints, with one operand or "-"
// it resets handlers: nothing is installed.
func (an *analyzer) trap(args []Word, text string, depth int) {
	if len(args) > 0 && !args[0].Dynamic && strings.HasPrefix(args[0].Value, "-") && args[0].Value != "-" {
		if args[0].Value != "--" {
			return // -l, -p (other options are errors)
		}
		args = args[1:]
	}
	if len(args) < 2 {
		return
	}
	if args[0].Dynamic {
		an.problem("%q installs a handler known only at run time", text)
		return
	}
	if args[0].Value != "-" {
		an.script(args[0].Value, depth+1)
	}
}

// shellInput is where a shell reads its commands from.
type shellInput int

const (
	shellStdin  shellInput = iota // standard input: sh -s, or no operand
	shellString                   // the -c string, a word of the line
	shellFile                     // a script file
	shellNone                     // nothing: --version, --help, -c without a string
)

// shellScript reads a shell's arguments the way bash does and returns its
// -c string or script file, or where else it reads commands from. It also
// reports, as unsafe, options that make the -c string mean more than it
// shows: a startup file (--rcfile, --init-file) runs first, and -k (-o
// keyword) turns every NAME=value argument into an environment variable
// of its command. A word known only at run time where an option or the
// script may stand is returned as a dynamic script.
func shellScript(args []Word) (script Word, in shellInput, unsafe string) {
	cflag, sflag := false, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		v := a.Value
		switch {
		case a.Dynamic:
			// An option (-c) or the script: either way, a script known only
			// at run time.
		case v == "--" || v == "-":
			if i+1 < len(args) {
				a = args[i+1]
				break
			}
			return Word{}, shellStdin, unsafe
		case v == "--rcfile" || v == "--init-file":
			unsafe = "runs a startup file (--rcfile, --init-file) that cannot be checked"
			i++
			continue
		case v == "--version" || v == "--help":
			return Word{}, shellNone, unsafe
		case strings.HasPrefix(v, "--"):
			continue
		case len(v) > 1 && (v[0] == '-' || v[0] == '+'):
			// A cluster (-ceo pipefail): every o and O takes the next word.
			for _, c := range v[1:] {
				switch {
				case c == 'o' || c == 'O':
					if i++; v[0] == '-' && c == 'o' && i < len(args) && (args[i].Dynamic || args[i].Value == "keyword") {
						unsafe = keywordProblem
					}
				case v[0] == '-' && c == 'k':
					unsafe = keywordProblem
				case v[0] == '-' && c == 'c':
					cflag = true
				case v[0] == '-' && c == 's':
					sflag = true
				}
			}
			continue
		}
		switch {
		case cflag:
			return a, shellString, unsafe
		case sflag:
			return Word{}, shellStdin, unsafe
		}
		return a, shellFile, unsafe
	}
	if cflag {
		return Word{}, shellNone, unsafe
	}
	return Word{}, shellStdin, unsafe
}

const keywordProblem = "sets -k (keyword): NAME=value arguments then set variables that decide what runs"

// setOptions checks set: -k (-o keyword) makes every NAME=value argument
// of a later command an environment variable of that command (set -k; git
// diff GIT_EXTERNAL_DIFF=x), which checkVar cannot see. Options end at
// "--" or the first operand (the positional parameters).
func (an *analyzer) setOptions(args []Word, text string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		v := a.Value
		if a.Dynamic {
			if a.MayBeOption || strings.HasPrefix(v, "-") {
				an.problem("%q: an option of set is only known at run time", text)
			}
			return
		}
		if v == "--" || v == "-" || len(v) < 2 || v[0] != '-' && v[0] != '+' {
			return
		}
		for _, c := range v[1:] {
			switch {
			case c == 'o':
				if i++; v[0] == '-' && i < len(args) && (args[i].Dynamic || args[i].Value == "keyword") {
					an.problem("%q %s", text, keywordProblem)
				}
			case c == 'k' && v[0] == '-':
				an.problem("%q %s", text, keywordProblem)
			}
		}
	}
}

// shellDecides records what a shell runs: the commands of its -c string,
// parsed like the line. A shell that reads its commands from standard
// input (echo cmd | sh, sh <<EOF, sh -s) or from a file the line names
// only at run time (sh <(…), sh /dev/stdin, sh "$f") runs what no rule can
// see: the line cannot be analysed. A script file is a program like any
// other: it needs a rule. It reports whether the -c string decides.
func (an *analyzer) shellDecides(args []Word, text string, depth int) bool {
	s, in, unsafe := shellScript(args)
	if unsafe != "" {
		an.problem("%q %s", text, unsafe)
	}
	switch in {
	case shellString:
		if s.Dynamic {
			an.problem("%q runs a script known only at run time", text)
		} else {
			an.script(s.Value, depth+1)
		}
		return true
	case shellStdin:
		an.problem("%q reads commands from its standard input, which cannot be checked", text)
	case shellFile:
		if s.Dynamic || stdinPath(s.Value) {
			an.problem("%q runs a script known only at run time", text)
		}
	}
	return false
}

// stdinPath reports whether a script path names a stream rather than a
// file: /dev/stdin, /dev/fd/N, /proc/self/fd/N.
func stdinPath(p string) bool {
	return strings.HasPrefix(p, "/dev/") || strings.HasPrefix(p, "/proc/") && strings.Contains(p, "/fd/")
}

// source (and .) runs a file in this shell. Like a script file, a file
// named on the line is a program that needs a rule; a file named only at
// run time, or a stream (. <(…), source /dev/stdin), runs commands the
// line does not show.
func (an *analyzer) source(args []Word, text string) {
	if len(args) > 0 && !args[0].Dynamic && args[0].Value == "--" {
		args = args[1:]
	}
	if len(args) > 0 && (args[0].Dynamic || stdinPath(args[0].Value)) {
		an.problem("%q runs a script known only at run time", text)
	}
}
