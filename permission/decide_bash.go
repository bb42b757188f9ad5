package permission

import (
	"fmt"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dshq/dsh/bash/analysis"
)

// match is a three-valued rule match: a word known only at run time may or
// may not complete a match.
type match int

const (
	noMatch match = iota
	maybeMatch
	yesMatch
)

// matchBash matches a Bash rule against one reading of a command.
//
// Strict matching (allow rules) needs every compared word literal and
// equal, and the command name spelled exactly as in the rule: allowing git
// must not allow ./git. Loose matching (deny and ask rules) reports maybe
// for a dynamic word and accepts a path-qualified name whose base is the
// rule's (/bin/rm for rm), so no spelling slips past a deny.
func (r *rule) matchBash(v analysis.View, strict bool) match {
	if r.kind == kindAny {
		return yesMatch
	}
	res := yesMatch
	for i, rw := range r.words {
		if i >= len(v.Words) {
			if v.Open && !strict {
				return maybeMatch
			}
			return noMatch
		}
		w := v.Words[i]
		switch {
		case w.Dynamic:
			if strict {
				return noMatch
			}
			res = maybeMatch
		case w.Value == rw:
		case !strict && i == 0 && strings.ContainsRune(w.Value, '/') && !strings.ContainsRune(rw, '/') && path.Base(w.Value) == rw:
		default:
			return noMatch
		}
	}
	if r.kind == kindBashExact {
		switch {
		case len(v.Words) > len(r.words):
			return noMatch
		case v.Open:
			if strict {
				return noMatch
			}
			return maybeMatch
		}
	}
	return res
}

// bashRule finds the first rule of rs that matches any of the views.
func bashRule(rs []*rule, views []analysis.View, strict bool) (*rule, match) {
	var maybe *rule
	for _, r := range rs {
		if r.tool != toolBash {
			continue
		}
		for _, v := range views {
			switch r.matchBash(v, strict) {
			case yesMatch:
				return r, yesMatch
			case maybeMatch:
				if maybe == nil {
					maybe = r
				}
			}
		}
	}
	if maybe != nil {
		return maybe, maybeMatch
	}
	return nil, noMatch
}

// bash decides a command line: every simple command it would run and every
// file it reads or writes must be allowed for the line to be allowed; one
// denied part denies the line.
func (d *decider) bash() verdict {
	a := d.args()
	line := a.Command
	if strings.TrimSpace(line) == "" {
		return verdict{behavior: Allow, reason: "an empty command runs nothing"}
	}
	base := d.cwd
	if wd := a.Workdir; wd != "" {
		base = absPath(wd, d.cwd)
	}
	an := analysis.Analyze(line, d.c.home)
	ld := d.lineDirs(an, base)
	vs := make([]verdict, 0, len(an.Commands)+len(an.Writes)+len(an.Reads)+len(an.Problems))
	add := func(v verdict) bool {
		vs = append(vs, v)
		return v.behavior == Deny
	}
	for i := range an.Commands {
		if v := d.bashCommand(&an.Commands[i], ld); add(v) {
			return v // a deny on any part denies the line; nothing else matters
		}
	}
	for _, t := range an.Writes {
		v := d.access(toolWrite, opWrite, t.Path, ld)
		v.reason = fmt.Sprintf("%q: %s", t.Text, v.reason)
		if add(v) {
			return v
		}
	}
	for _, t := range an.Reads {
		v := d.redirectRead(t, ld)
		if add(v) {
			return v
		}
	}
	for _, t := range an.Network {
		if add(d.network(t)) {
			return vs[len(vs)-1]
		}
	}
	if an.Links {
		if r := d.anyPathRule(toolRead, toolWrite); r != nil {
			add(verdict{behavior: Ask, rule: r, reason: fmt.Sprintf("%q creates links, so the files it uses after that may not be the ones named, and permission rule %s from %s may cover them", line, r.Text, r.Source)})
		}
	}
	for _, p := range an.Problems {
		add(d.problem(line, p))
	}
	if an.DynamicWrite {
		if v, ok := d.dynamicWrite(line); ok {
			add(v)
		}
	}
	return combine(vs)
}

// lineDirs are the directories a line's commands may run in.
type lineDirs struct {
	// dirs are absolute: the starting directory first.
	dirs []string
	// unknown: a cd leads somewhere known only at run time.
	unknown bool
	// outside: some directory is outside the workspace (or unknown).
	outside bool
	// where describes the first directory outside, for messages.
	where string
}

func (d *decider) lineDirs(an *analysis.Line, base string) *lineDirs {
	ld := &lineDirs{dirs: []string{base}, unknown: an.DirUnknown}
	for _, dir := range an.Dirs {
		ld.dirs = append(ld.dirs, absPath(dir, base))
	}
	if ld.unknown {
		ld.outside, ld.where = true, "a directory known only at run time"
		return ld
	}
	for _, dir := range ld.dirs {
		if !d.inWorkspace(d.resolve(dir)) {
			ld.outside, ld.where = true, dir
			break
		}
	}
	return ld
}

// access decides a file the line reads or writes, named by path (relative
// to any directory the line may be in), like the read and write tools
// would: the strictest decision over every place it may be.
func (d *decider) access(tool string, op fileOp, p string, ld *lineDirs) verdict {
	if filepath.IsAbs(p) {
		return d.accessOne(tool, op, filepath.Clean(p), false)
	}
	var vs []verdict
	for _, dir := range ld.dirs {
		v := d.accessOne(tool, op, absPath(p, dir), ld.unknown)
		if v.behavior == Deny {
			return v
		}
		vs = append(vs, v)
	}
	return combine(vs)
}

// accessOne is access for one place, with the file's other names
// (hard links) checked for reads.
func (d *decider) accessOne(tool string, op fileOp, abs string, uncertain bool) verdict {
	real := d.resolve(abs)
	v := d.path(tool, op, abs, real, false, uncertain)
	if v.behavior != Deny && op == opRead {
		if why := d.linkedToDenied(toolRead, real, nil); why != "" {
			return verdict{behavior: Deny, reason: why}
		}
	}
	return v
}

// redirectRead decides an input redirection (< file, $(< file)) as a
// read of that file: the read tool's boundary and rules. A path known
// only at run time may be any file.
func (d *decider) redirectRead(t analysis.File, ld *lineDirs) verdict {
	if t.Dynamic {
		for _, rs := range [][]*rule{d.deny(), d.ask()} {
			if r := d.firstRule(rs, toolRead, func(r *rule) bool { return r.kind == kindPath }); r != nil {
				return verdict{behavior: Ask, rule: r, reason: fmt.Sprintf("%q reads a path known only at run time, which permission rule %s from %s may cover", t.Text, r.Text, r.Source)}
			}
		}
		if d.mode == ModeBypass {
			return verdict{behavior: Allow, reason: "mode bypassPermissions allows " + strconv.Quote(t.Text)}
		}
		return verdict{behavior: Ask, reason: fmt.Sprintf("%q reads a path known only at run time, which may be outside the workspace", t.Text)}
	}
	v := d.access(toolRead, opRead, t.Path, ld)
	v.reason = fmt.Sprintf("%q: %s", t.Text, v.reason)
	return v
}

// network decides a redirection to /dev/tcp or /dev/udp: a connection
// bash opens itself, past any web rule. It asks, except in
// bypassPermissions mode without WebFetch deny or ask rules.
func (d *decider) network(t analysis.File) verdict {
	for _, rs := range [][]*rule{d.deny(), d.ask()} {
		if r := d.firstRule(rs, toolWebFetch, func(*rule) bool { return true }); r != nil {
			return verdict{behavior: Ask, rule: r, reason: fmt.Sprintf("%q opens a network connection, which permission rule %s from %s may cover", t.Text, r.Text, r.Source)}
		}
	}
	if d.mode == ModeBypass {
		return verdict{behavior: Allow, reason: "mode bypassPermissions allows " + strconv.Quote(t.Text)}
	}
	return verdict{behavior: Ask, reason: fmt.Sprintf("%q opens a network connection (%s)", t.Text, t.Path)}
}

// anyPathRule returns a deny or ask rule about paths for any of the tools.
func (d *decider) anyPathRule(tools ...string) *rule {
	for _, rs := range [][]*rule{d.deny(), d.ask()} {
		for _, t := range tools {
			if r := d.firstRule(rs, t, func(r *rule) bool { return r.kind == kindPath }); r != nil {
				return r
			}
		}
	}
	return nil
}

// bashDenyOrAsk returns a Bash deny or ask rule, if any exists.
func (d *decider) bashDenyOrAsk() *rule {
	for _, rs := range [][]*rule{d.deny(), d.ask()} {
		for _, r := range rs {
			if r.tool == toolBash {
				return r
			}
		}
	}
	return nil
}

// dynamicWrite decides a redirection whose target is known only at run
// time ("> $F", "> ~root/x") in bypassPermissions mode. Its problem asks in
// every other mode, but in this one only Bash rules make problems ask: an
// Edit or Write deny or ask rule must hold too, since the target may be
// what it covers.
func (d *decider) dynamicWrite(line string) (verdict, bool) {
	if d.mode != ModeBypass {
		return verdict{}, false
	}
	for _, rs := range [][]*rule{d.deny(), d.ask()} {
		if r := d.firstRule(rs, toolWrite, func(r *rule) bool { return r.kind == kindPath }); r != nil {
			return verdict{behavior: Ask, rule: r, reason: fmt.Sprintf("%q writes to a path known only at run time, which permission rule %s from %s may cover", line, r.Text, r.Source)}, true
		}
	}
	return verdict{}, false
}

// bashCommand decides one simple command.
func (d *decider) bashCommand(cmd *analysis.Command, ld *lineDirs) verdict {
	r, m := bashRule(d.deny(), cmd.Views, false)
	if m == yesMatch {
		return ruleVerdict(Deny, r, strconv.Quote(cmd.Text))
	}
	if d.mode == ModePlan && !cmd.ReadOnly {
		return verdict{behavior: Deny, reason: fmt.Sprintf("plan mode: %q may change state; only read-only commands run until the user approves a plan (present it with %s)", cmd.Text, ExitPlanTool)}
	}
	if m == maybeMatch {
		return verdict{behavior: Ask, rule: r, reason: fmt.Sprintf("%q might run what permission rule %s from %s denies (part of it is only known at run time)", cmd.Text, r.Text, r.Source)}
	}
	if r, m := bashRule(d.deny(), cmd.Maybe, false); m != noMatch {
		return verdict{behavior: Ask, rule: r, reason: fmt.Sprintf("%q may run what permission rule %s from %s denies (its arguments name a program it may run)", cmd.Text, r.Text, r.Source)}
	}
	if r, m := bashRule(d.ask(), cmd.Views, false); m != noMatch {
		return ruleVerdict(Ask, r, strconv.Quote(cmd.Text))
	}
	if r, m := bashRule(d.ask(), cmd.Maybe, false); m != noMatch {
		return verdict{behavior: Ask, rule: r, reason: fmt.Sprintf("%q may run what permission rule %s from %s requires approval for (its arguments name a program it may run)", cmd.Text, r.Text, r.Source)}
	}
	paths := d.commandPaths(cmd, ld)
	if paths.behavior == Deny {
		return paths
	}
	if cmd.Code || len(cmd.Hidden) > 0 {
		// What it runs is not on the line: a deny or ask rule about
		// commands (or, for code, about files) cannot be checked against it.
		r := d.bashDenyOrAsk()
		if r == nil && cmd.Code {
			r = d.anyPathRule(toolRead, toolWrite)
		}
		if r != nil {
			why := "it runs code that can run any program"
			if !cmd.Code {
				why = cmd.Hidden[0]
			}
			return verdict{behavior: Ask, rule: r, reason: fmt.Sprintf("%q: %s, and permission rule %s from %s cannot be checked against what that runs", cmd.Text, why, r.Text, r.Source)}
		}
	}
	var v verdict
	switch {
	case cmd.Effective == nil:
		v = verdict{behavior: Allow, reason: fmt.Sprintf("%q runs commands that are checked one by one", cmd.Text)}
	default:
		if r, _ := bashRule(d.allow(), []analysis.View{*cmd.Effective}, true); r != nil {
			v = ruleVerdict(Allow, r, strconv.Quote(cmd.Text))
			if r.kind != kindAny {
				if e, ok := d.beyondRule(cmd, r, ld); ok {
					return e
				}
			}
			break
		}
		switch {
		case cmd.Neutral:
			v = verdict{behavior: Allow, reason: fmt.Sprintf("%q changes nothing outside the shell", cmd.Text)}
		case d.mode == ModeBypass:
			v = verdict{behavior: Allow, reason: fmt.Sprintf("mode bypassPermissions allows %q", cmd.Text)}
		default:
			v = verdict{behavior: Ask, reason: fmt.Sprintf("%q is not allowed by any permission rule (mode %s)", cmd.Text, d.mode)}
			if s, ok := suggestRule(cmd); ok {
				v.suggest = []string{s}
			}
			return v
		}
	}
	if paths.behavior == Ask {
		return paths
	}
	return v
}

// beyondRule is the rule of thumb for commands an allow rule covers: a
// rule allows the command with ordinary arguments, working on files in
// the workspace. Options that make it run other programs or load code
// (go test -exec, git diff --ext-diff, npm --script-shell, …), files or
// directories it names outside the workspace (go test -o /tmp/x, git
// diff --no-index /etc/f, npm --prefix ../other), and running in a
// directory outside the workspace (workdir, a cd) are beyond it and ask,
// unless the rule names the command exactly.
func (d *decider) beyondRule(cmd *analysis.Command, r *rule, ld *lineDirs) (verdict, bool) {
	if r.kind == kindBashExact && !cmd.Effective.Open {
		return verdict{}, false // the user allowed exactly these words
	}
	why := ""
	if len(cmd.Hidden) > 0 {
		why = cmd.Hidden[0]
	} else {
		why = d.outsidePath(cmd, ld)
	}
	switch {
	case why != "":
	case ld.outside:
		why = "it runs in " + ld.where + ", outside the workspace"
	default:
		return verdict{}, false
	}
	return verdict{behavior: Ask, rule: r, reason: fmt.Sprintf("%q goes beyond what permission rule %s from %s allows: %s", cmd.Text, r.Text, r.Source, why)}, true
}

// commandPaths decides the files a command's arguments name. Deny rules
// hold for them in every mode: Read rules for what it reads, Edit and
// Write rules for what it writes, both when its use of the file is not
// known (a guess can only ask). Ask rules ask. A write to a file that
// configures programs which run on their own (.git/config, .envrc, …)
// asks unless the mode is bypassPermissions or an Edit rule allows it.
func (d *decider) commandPaths(cmd *analysis.Command, ld *lineDirs) verdict {
	out := verdict{behavior: Allow}
	if len(cmd.Paths) == 0 {
		return out
	}
	readRules := d.anyPathRule(toolRead) != nil
	writeRules := d.anyPathRule(toolWrite) != nil
	for _, pa := range cmd.Paths {
		write := pa.Access == analysis.AccessWrite || pa.Access == analysis.AccessUnknown
		read := pa.Access != analysis.AccessWrite
		if pa.Dynamic {
			// Known only at run time: it may be any file a rule covers.
			var r *rule
			if read && readRules {
				r = d.anyPathRule(toolRead)
			}
			if r == nil && write && writeRules {
				r = d.anyPathRule(toolWrite)
			}
			if r != nil && out.behavior != Ask {
				out = verdict{behavior: Ask, rule: r, reason: fmt.Sprintf("%q uses a path known only at run time (%s), which permission rule %s from %s may cover", cmd.Text, pa.Text, r.Text, r.Source)}
			}
			continue
		}
		if !(read && readRules || write && writeRules || write && protectedFile(pa.Path) != "" || write && d.mode != ModeBypass) {
			continue
		}
		for _, abs := range d.places(pa.Path, ld) {
			real := d.resolve(abs)
			v := d.pathArg(cmd, pa, abs, real, read && readRules, write && writeRules)
			if pa.Recursive && v.behavior != Deny {
				if rv, ok := d.treeRule(cmd, pa, real, read && readRules, write && writeRules); ok && rv.behavior.strength() > v.behavior.strength() {
					v = rv
				}
			}
			if write {
				if pv, ok := d.protectedWrite(abs, real, fmt.Sprintf("%q (%s %s)", cmd.Text, pa.Access, abs)); ok && pv.behavior.strength() > v.behavior.strength() {
					v = pv
				}
			}
			if v.behavior == Deny {
				return v
			}
			if v.behavior.strength() > out.behavior.strength() {
				out = v
			}
		}
	}
	return out
}

// places are the absolute paths a path argument may name: itself when
// absolute, else relative to every directory the line may be in.
func (d *decider) places(p string, ld *lineDirs) []string {
	if out, ok := d.placed[p]; ok {
		return out
	}
	var out []string
	if filepath.IsAbs(p) {
		out = []string{filepath.Clean(p)}
	} else {
		out = make([]string, len(ld.dirs))
		for i, dir := range ld.dirs {
			out[i] = absPath(p, dir)
		}
	}
	if d.placed == nil {
		d.placed = make(map[string][]string, 16)
	}
	d.placed[p] = out // one line, one set of directories
	return out
}

// pathArg matches one place of a path argument against deny and ask
// rules: Read rules when it may be read, Edit and Write rules when it may
// be written.
func (d *decider) pathArg(cmd *analysis.Command, pa analysis.PathArg, abs, real string, read, write bool) verdict {
	var tools []string
	if read {
		tools = append(tools, toolRead)
	}
	if write {
		tools = append(tools, toolWrite)
	}
	what := func() string { return fmt.Sprintf("%q (%s %s)", cmd.Text, pa.Access, abs) }
	matches := func(r *rule) bool { return r.kind == kindPath && d.pathMatch(r, abs, real, false) }
	out := verdict{behavior: Allow}
	for _, t := range tools {
		if r := d.firstRule(d.deny(), t, matches); r != nil {
			if pa.Access == analysis.AccessUnknown {
				return verdict{behavior: Ask, rule: r, reason: fmt.Sprintf("%q may use %s, which permission rule %s from %s denies", cmd.Text, abs, r.Text, r.Source)}
			}
			return ruleVerdict(Deny, r, what())
		}
		if r := d.firstRule(d.ask(), t, matches); r != nil {
			out = ruleVerdict(Ask, r, what())
		}
	}
	if read {
		if why := d.linkedToDenied(toolRead, real, nil); why != "" {
			if pa.Access == analysis.AccessUnknown {
				return verdict{behavior: Ask, reason: fmt.Sprintf("%q may read %s", cmd.Text, why)}
			}
			return verdict{behavior: Deny, reason: fmt.Sprintf("%q reads %s", cmd.Text, why)}
		}
	}
	return out
}

// treeRule decides a directory a program works through whole (grep -r,
// rm -r, tar, find): it asks when a deny or ask rule covers files below
// it, which the program will read or change with the rest.
func (d *decider) treeRule(cmd *analysis.Command, pa analysis.PathArg, real string, read, write bool) (verdict, bool) {
	fi := d.lstat(real)
	if fi == nil || !fi.IsDir() {
		return verdict{}, false
	}
	realCwd, _ := d.workspace()
	var tools []string
	if read {
		tools = append(tools, toolRead)
	}
	if write {
		tools = append(tools, toolWrite)
	}
	for _, rs := range [][]*rule{d.deny(), d.ask()} {
		for _, t := range tools {
			if r := d.firstRule(rs, t, func(r *rule) bool { return r.kind == kindPath && r.path.under(real, realCwd) }); r != nil {
				return verdict{behavior: Ask, rule: r, reason: fmt.Sprintf("%q works through %s, which holds files permission rule %s from %s covers", cmd.Text, real, r.Text, r.Source)}, true
			}
		}
	}
	return verdict{}, false
}

// outsidePath describes the first file a command's arguments name outside
// the workspace, or "".
func (d *decider) outsidePath(cmd *analysis.Command, ld *lineDirs) string {
	for _, pa := range cmd.Paths {
		if pa.Dynamic {
			if pa.Untrusted {
				return fmt.Sprintf("it uses a path the line chooses at run time (%s), which may be outside the workspace", pa.Text)
			}
			continue
		}
		if ld.unknown && !filepath.IsAbs(pa.Path) {
			return fmt.Sprintf("%s is relative to a directory known only at run time", pa.Text)
		}
		for _, abs := range d.places(pa.Path, ld) {
			if !d.inWorkspace(d.resolve(abs)) {
				return fmt.Sprintf("it would %s %s, outside the workspace", pa.Access, abs)
			}
		}
	}
	return ""
}

// exactRule is the Bash rule that allows exactly this command, when one
// can be written (no word known only at run time).
// suggestRule is the rule offered for "allow for this session" and
// "always for this project": a prefix rule (Bash(git log:*)) where the
// command's kind is plain from its first words, so the next git log with
// other options runs without asking while git push still asks; the exact
// command otherwise. A prefix is offered for programs with subcommands
// (the subcommand is part of it; npm run's script too) and for commands
// that change nothing; a command that changes files (rm build) gets its
// exact words, since "rm:*" would allow every deletion. A prefix rule
// still asks when the options or paths go beyond it (beyondRule).
func suggestRule(cmd *analysis.Command) (string, bool) {
	v := *cmd.Effective
	exact, ok := exactRule(v)
	if !ok {
		return "", false
	}
	if n := prefixWords(v.Words, cmd.ReadOnly); n > 0 && n < len(v.Words) {
		return "Bash(" + analysis.JoinWords(v.Words[:n]) + ":*)", true
	}
	return exact, true
}

// subcommandPrograms name their action with their first argument (git
// log, go test); scriptRunners run a named script (npm run build).
var (
	subcommandPrograms = map[string]bool{
		"git": true, "go": true, "npm": true, "pnpm": true, "yarn": true, "bun": true, "deno": true, "cargo": true,
		"docker": true, "podman": true, "kubectl": true, "helm": true, "gh": true, "make": true, "pip": true, "pip3": true,
		"uv": true, "poetry": true, "dotnet": true, "terraform": true, "systemctl": true, "apt": true, "brew": true,
		"mvn": true, "gradle": true, "rustup": true, "nix": true, "just": true, "task": true,
	}
	scriptRunners = map[string]bool{"npm": true, "pnpm": true, "yarn": true, "bun": true}
)

// prefixWords is how many of a command's words its prefix rule names (0:
// none fits).
func prefixWords(ws []analysis.Word, readOnly bool) int {
	bare := func(i int) bool {
		if i >= len(ws) || ws[i].Dynamic {
			return false
		}
		w := ws[i].Value
		if w == "" || w[0] == '-' {
			return false
		}
		for _, r := range w {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == ':') {
				return false // a path, a file name, an expression: not a subcommand
			}
		}
		return true
	}
	name := ws[0].Value
	switch {
	case subcommandPrograms[name] && bare(1):
		if scriptRunners[name] && ws[1].Value == "run" && bare(2) {
			return 3
		}
		return 2
	case readOnly && !strings.Contains(name, "/"):
		return 1
	}
	return 0
}

func exactRule(v analysis.View) (string, bool) {
	if v.Open || len(v.Words) == 0 {
		return "", false
	}
	for _, w := range v.Words {
		if w.Dynamic {
			return "", false
		}
	}
	return "Bash(" + analysis.JoinWords(v.Words) + ")", true
}

// problem decides a line the analysis could not fully read. It asks, since
// nobody can say what it runs; plan mode refuses it, and bypass mode runs
// it unless some Bash deny or ask rule exists that it might evade.
func (d *decider) problem(line, p string) verdict {
	reason := fmt.Sprintf("cannot verify %q: %s", line, p)
	switch d.mode {
	case ModePlan:
		return verdict{behavior: Deny, reason: "plan mode: " + reason}
	case ModeBypass:
		for _, rs := range [][]*rule{d.deny(), d.ask()} {
			for _, r := range rs {
				if r.tool == toolBash {
					// The rule is named: a sandbox confining the command knows
					// nothing of rules about commands, so it must not answer
					// this question (see sandboxDecision).
					return verdict{behavior: Ask, rule: r, reason: reason + fmt.Sprintf(" (and permission rule %s from %s might apply)", r.Text, r.Source)}
				}
			}
		}
		return verdict{behavior: Allow, reason: "mode bypassPermissions allows " + fmt.Sprintf("%q", line)}
	}
	return verdict{behavior: Ask, reason: reason}
}
