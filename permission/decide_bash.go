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
// file it redirects to must be allowed for the line to be allowed; one
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
	vs := make([]verdict, 0, len(an.Commands)+len(an.Writes)+len(an.Problems))
	for i := range an.Commands {
		v := d.bashCommand(&an.Commands[i])
		if v.behavior == Deny {
			return v // a deny on any part denies the line; nothing else matters
		}
		vs = append(vs, v)
	}
	for _, t := range an.Writes {
		uncertain := an.Chdir && !filepath.IsAbs(t.Path)
		abs := absPath(t.Path, base)
		v := d.path(toolWrite, opWrite, abs, resolve(abs), false, uncertain)
		v.reason = fmt.Sprintf("%q: %s", t.Text, v.reason)
		if v.behavior == Deny {
			return v
		}
		vs = append(vs, v)
	}
	for _, t := range an.Reads {
		if v, ok := d.redirectRead(t, base); ok {
			if v.behavior == Deny {
				return v
			}
			vs = append(vs, v)
		}
	}
	for _, p := range an.Problems {
		vs = append(vs, d.problem(line, p))
	}
	if an.DynamicWrite {
		if v, ok := d.dynamicWrite(line); ok {
			vs = append(vs, v)
		}
	}
	return combine(vs)
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
func (d *decider) bashCommand(cmd *analysis.Command) verdict {
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
	if r, m := bashRule(d.ask(), cmd.Views, false); m != noMatch {
		return ruleVerdict(Ask, r, strconv.Quote(cmd.Text))
	}
	if cmd.Effective == nil {
		return verdict{behavior: Allow, reason: fmt.Sprintf("%q runs commands that are checked one by one", cmd.Text)}
	}
	if r, _ := bashRule(d.allow(), []analysis.View{*cmd.Effective}, true); r != nil {
		return ruleVerdict(Allow, r, strconv.Quote(cmd.Text))
	}
	if cmd.Neutral {
		return verdict{behavior: Allow, reason: fmt.Sprintf("%q changes nothing outside the shell", cmd.Text)}
	}
	if d.mode == ModeBypass {
		return verdict{behavior: Allow, reason: fmt.Sprintf("mode bypassPermissions allows %q", cmd.Text)}
	}
	v := verdict{behavior: Ask, reason: fmt.Sprintf("%q is not allowed by any permission rule (mode %s)", cmd.Text, d.mode)}
	if s, ok := exactRule(*cmd.Effective); ok {
		v.suggest = []string{s}
	}
	return v
}

// exactRule is the Bash rule that allows exactly this command, when one
// can be written (no word known only at run time).
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

// redirectRead checks an input redirection against Read deny and ask
// rules only: reading is what the command does anyway, but a deny on
// Read(~/.ssh/**) must hold for "cmd < ~/.ssh/id_rsa" too.
func (d *decider) redirectRead(t analysis.File, base string) (verdict, bool) {
	if t.Dynamic {
		for _, rs := range [][]*rule{d.deny(), d.ask()} {
			if r := d.firstRule(rs, toolRead, func(r *rule) bool { return r.kind == kindPath }); r != nil {
				return verdict{behavior: Ask, rule: r, reason: fmt.Sprintf("%q reads a path known only at run time, which permission rule %s from %s may cover", t.Text, r.Text, r.Source)}, true
			}
		}
		return verdict{}, false
	}
	abs := absPath(t.Path, base)
	real := resolve(abs)
	if r := d.firstRule(d.deny(), toolRead, func(r *rule) bool { return r.kind == kindPath && d.pathMatch(r, abs, real, false) }); r != nil {
		return ruleVerdict(Deny, r, fmt.Sprintf("%q (read %s)", t.Text, abs)), true
	}
	if r := d.firstRule(d.ask(), toolRead, func(r *rule) bool { return r.kind == kindPath && d.pathMatch(r, abs, real, false) }); r != nil {
		return ruleVerdict(Ask, r, fmt.Sprintf("%q (read %s)", t.Text, abs)), true
	}
	return verdict{}, false
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
					return verdict{behavior: Ask, reason: reason + fmt.Sprintf(" (and permission rule %s from %s might apply)", r.Text, r.Source)}
				}
			}
		}
		return verdict{behavior: Allow, reason: "mode bypassPermissions allows " + fmt.Sprintf("%q", line)}
	}
	return verdict{behavior: Ask, reason: reason}
}
