package analysis

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// redirect records files a redirection writes or reads.
func (an *analyzer) redirect(r *syntax.Redirect, src string) {
	write, read := false, false
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		return
	case syntax.RdrIn:
		read = true
	case syntax.RdrInOut:
		read, write = true, true
	case syntax.DplIn, syntax.DplOut:
		w := an.word(r.Word)
		if !w.Dynamic && (w.Value == "-" || isDigits(w.Value)) {
			return // fd duplication: >&2, 2>&1, >&-
		}
		read, write = r.Op == syntax.DplIn, r.Op == syntax.DplOut
	default:
		write = true
	}
	if len(r.Word.Parts) == 1 {
		if _, ok := r.Word.Parts[0].(*syntax.ProcSubst); ok {
			return // > >(cmd): a pipe; cmd itself is analysed
		}
	}
	w := an.word(r.Word)
	text := source(src, r)
	p, ok := an.pathWord(w)
	if ok && safeDevice(p) {
		return
	}
	t := File{Path: p, Dynamic: !ok, Text: text}
	if ok && (strings.HasPrefix(p, "/dev/tcp/") || strings.HasPrefix(p, "/dev/udp/")) {
		an.a.Network = append(an.a.Network, t)
		return
	}
	if write {
		if t.Dynamic {
			an.problem("%q writes to a path known only at run time", text)
			an.a.DynamicWrite = true
		} else {
			an.a.Writes = append(an.a.Writes, t)
		}
	}
	if read {
		an.a.Reads = append(an.a.Reads, t)
	}
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// safeDevice lists targets that are not files anyone cares about.
func safeDevice(p string) bool {
	switch p {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty", "/dev/zero", "/dev/urandom", "/dev/random", "/dev/full":
		return true
	}
	return strings.HasPrefix(p, "/dev/fd/")
}

// pathWord is the path a redirection target or a path argument names,
// with a leading unquoted ~ expanded the way the shell does. It reports
// false when the path is only known at run time: a dynamic word, or a
// tilde that bash looks up when the line runs (~user is that user's home,
// ~+ and ~- are $PWD and $OLDPWD), or ~ when the home directory is not
// known. Read as a relative path, ~root/.bashrc would pass for a file in
// the project.
func (an *analyzer) pathWord(w Word) (string, bool) {
	switch {
	case w.Dynamic:
		return w.Value, false
	case !w.Tilde:
		return w.Value, true
	case w.Home && an.home != "":
		return an.home + w.Value[1:], true
	}
	return w.Value, false
}
