package term

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/dshq/dsh/agent"
	slash "github.com/dshq/dsh/commands"
	"github.com/dshq/dsh/compact"
	"github.com/dshq/dsh/hooks"
	"github.com/dshq/dsh/permission"
	"github.com/dshq/dsh/session"
)

type command struct {
	name, args, help string
}

var commands = []command{
	{"help", "", "show commands and keys"},
	{"model", "[ref]", "show the model, list the others, or switch (from the next step)"},
	{"resume", "[n|id]", "list this directory's recent sessions, or resume one"},
	{"clear", "", "start a new session"},
	{"compact", "[focus]", "summarise the conversation to free context"},
	{"rewind", "", "take the files and/or the conversation back to before an earlier turn (also esc esc)"},
	{"permissions", "[mode <m> | allow|ask|deny|remove <rule>]", "show the mode and rules, switch the mode, or add/remove a session rule"},
	{"thinking", "", "show or hide the model's reasoning in full"},
	{"vim", "", "turn the prompt's vim mode on or off for this session (\"editorMode\": \"vim\" in settings for every session)"},
	{"usage", "", "token usage of this session"},
	{"cost", "", "what this session cost so far, by model"},
	{"status", "", "model, provider, session, directory, permission mode, sandbox, MCP servers, memory files"},
	{"diff", "", "what this session changed in the files, as a diff"},
	{"context", "", "what the last request held: system prompt, tools, memory files, MCP tools, history"},
	{"exit", "", "quit (also /quit, ctrl-d on an empty line)"},
}

func (u *ui) command(line string) {
	name, arg, _ := strings.Cut(strings.TrimPrefix(line, "/"), " ")
	arg = strings.TrimSpace(arg)
	switch name {
	case "help", "?":
		u.help()
	case "model":
		u.modelCmd(arg)
	case "resume":
		u.resumeCmd(arg)
	case "clear", "new":
		if u.busy() {
			u.tr.Note(u.st.Warn("a turn is running: interrupt it first (esc or ctrl-c)"))
			return
		}
		if err := u.switchTo(func(ctx context.Context) (*agent.Handle, error) { return u.app.Start(ctx, u) }, "", hooks.EndClear); err == nil {
			u.tr.Note(u.st.Dim("── new session " + string(u.cur.Load().sess.ID()) + " ──"))
		}
	case "compact":
		u.compactCmd(arg)
	case "rewind", "checkpoint":
		u.openRewind()
	case "permissions":
		u.permissionsCmd(arg)
	case "thinking":
		u.tr.ShowThinking = !u.tr.ShowThinking
		if !u.tr.ShowThinking {
			u.tr.Note(u.st.Dim("reasoning is collapsed again"))
			return
		}
		msg := u.st.Dim("reasoning is shown in full from now on")
		if u.tr.LastReasoning != "" {
			msg += "\n" + u.tr.thinking(u.tr.LastReasoning)
		}
		u.tr.Note(msg)
	case "vim":
		u.ed.SetVim(!u.ed.Vim())
		if u.ed.Vim() {
			u.tr.Note(u.st.Dim("vim mode on: esc for NORMAL, i to insert again (\"editorMode\": \"vim\" in settings keeps it on)"))
		} else {
			u.tr.Note(u.st.Dim("vim mode off"))
		}
	case "cost":
		u.tr.Note(u.costReport())
	case "status":
		u.tr.Note(u.statusReport())
	case "context":
		u.tr.Note(u.contextReport())
	case "diff":
		u.diffCmd()
	case "usage":
		t := u.tr.Total
		u.tr.Note(fmt.Sprintf("this session: %d %s · in %s · out %s · cache read %s · cache write %s",
			u.tr.Turns, plural(u.tr.Turns, "turn", "turns"), fmtTokens(t.InputTokens), fmtTokens(t.OutputTokens), fmtTokens(t.CacheReadTokens), fmtTokens(t.CacheWriteTokens)))
	case "exit", "quit", "q":
		u.quit = true
	default:
		if u.customCommand(line) {
			return
		}
		u.tr.Note(u.st.Warn("unknown command /" + name + " (try /help; start a message with // to send a literal /)"))
	}
}

// customs are the custom commands of the working directory (nil when the
// commands plugin is off).
func (u *ui) customs() *slash.Set {
	if u.app.Commands == nil {
		return nil
	}
	return u.app.Commands.For(u.cwd())
}

// customReady is a custom command made into a prompt (or refused).
type customReady struct {
	cur *current
	p   slash.Prepared
	err error
}

// customCommand runs a custom slash command: its !`cmd` lines and @files
// are done off the UI goroutine (they may ask for approval), then the
// prompt is sent as the next turn.
func (u *ui) customCommand(line string) bool {
	name, _, _ := slash.Split(line)
	if _, ok := u.customs().Lookup(name); !ok {
		return false
	}
	c := u.cur.Load()
	if c == nil {
		u.tr.Note(u.st.Err("no agent is running (try /clear)"))
		return true
	}
	cmds := u.app.Commands
	go func() {
		p, err := cmds.Prepare(u.ctx, c.ag, line)
		u.q.push(customReady{cur: c, p: p, err: err})
	}()
	return true
}

func (u *ui) customDone(m customReady) {
	for _, w := range m.p.Warnings {
		u.tr.Note(u.st.Warn(sanitize(w)))
	}
	if m.err != nil {
		u.tr.Note(u.st.Err(sanitize(m.err.Error())))
		return
	}
	if m.cur != u.cur.Load() {
		u.tr.Note(u.st.Warn("the session changed while the command was prepared; not sent"))
		return
	}
	if m.cur.ag.Status() != agent.Running {
		u.busySince = time.Now()
	}
	if err := m.cur.ag.Send(u.ctx, m.p.Content, m.p.Source); err != nil {
		u.tr.Note(u.st.Err("could not send: " + sanitize(err.Error())))
	}
}

func (u *ui) help() {
	var b strings.Builder
	b.WriteString(u.st.Bold("Commands") + "\n")
	for _, c := range commands {
		left := "/" + c.name
		if c.args != "" {
			left += " " + c.args
		}
		fmt.Fprintf(&b, "  %s%s %s\n", u.st.Accent(left), strings.Repeat(" ", max(1, 30-len(left))), c.help)
	}
	if cs := u.customs().All(); len(cs) > 0 {
		b.WriteString("\n" + u.st.Bold("Custom commands") + "\n")
		for _, c := range cs {
			left := "/" + c.Name
			if c.ArgumentHint != "" {
				left += " " + c.ArgumentHint
			}
			fmt.Fprintf(&b, "  %s%s %s%s\n", u.st.Accent(sanitize(left)), strings.Repeat(" ", max(1, 30-len(left))), sanitize(c.Summary()), u.st.Dim(" ("+c.Source+")"))
		}
	}
	b.WriteString("\n" + u.st.Bold("Keys") + "\n")
	keys := [][2]string{
		{"enter", "send; while the agent works, steer the running turn"},
		{"ctrl-j, alt-enter, \\ at the end", "new line"},
		{"esc, ctrl-c", "interrupt the running turn; ctrl-c twice on an empty prompt exits"},
		{"esc esc", "rewind: pick an earlier turn to take the files and/or conversation back to (on an empty prompt; also /rewind)"},
		{"ctrl-d", "exit (on an empty line)"},
		{"↑ ↓", "history (saved in $DSH_HOME/history)"},
		{"ctrl-r", "search the history (again: older; esc: back)"},
		{"!command", "run a shell command; its output becomes context"},
		{"ctrl-o", "transcript view: the whole session, tool output and diffs in full (tab picks a card, enter expands it, / searches)"},
		{"ctrl-z", "suspend (fg resumes)"},
		{"ctrl-v", "paste an image from the clipboard as [Image #n] (wl-paste, xclip or pngpaste); @path or a dragged path attaches an image file"},
		{"@", "mention a file, directory or MCP resource (@server:uri): its content is attached"},
		{"ctrl-a/e, ctrl-k/u/w, ctrl-y", "start/end of line, cut to end/start/word, paste the cut"},
		{"tab", "complete a command"},
		{"shift-tab", "cycle the permission mode"},
		{"y, a, n (a question)", "allow once, for the session, deny; keys typed just before a question opens, or while the prompt holds text, stay on the prompt"},
	}
	for _, k := range keys {
		fmt.Fprintf(&b, "  %s%s %s\n", u.st.Key(k[0]), strings.Repeat(" ", max(1, 30-ansi.StringWidth(k[0]))), k[1])
	}
	u.tr.Note(b.String())
}

func (u *ui) modelCmd(arg string) {
	svc := u.app.Host.LLM
	if arg == "" {
		var b strings.Builder
		b.WriteString("model: " + u.modelLabel() + "\n")
		models := svc.Models()
		if len(models) > 0 {
			b.WriteString(u.st.Dim("available (switch with /model <ref>):") + "\n")
		}
		cur := u.modelName()
		for _, m := range models {
			mark := "  "
			if m.ID == cur {
				mark = u.st.OK("● ")
			}
			extra := ""
			if m.ContextWindow > 0 {
				extra = u.st.Dim(fmt.Sprintf("  %s context", fmtTokens(m.ContextWindow)))
			}
			b.WriteString("  " + mark + m.ID + extra + "\n")
		}
		u.tr.Note(b.String())
		return
	}
	id, _, ok := svc.Resolve(arg)
	if !ok {
		u.tr.Note(u.st.Err(fmt.Sprintf("unknown model %q (see /model for the list)", arg)))
		return
	}
	if id == u.app.Model {
		u.model.Store(nil)
	} else {
		u.model.Store(&id)
	}
	msg := "model set to " + u.modelLabel()
	if u.busy() {
		msg += u.st.Dim(" (from the next step)")
	}
	u.tr.Note(msg)
}

func (u *ui) resumeCmd(arg string) {
	if arg == "" {
		u.openPicker(false)
		return
	}
	if u.busy() {
		u.tr.Note(u.st.Warn("a turn is running: interrupt it first (esc or ctrl-c)"))
		return
	}
	id := arg
	if n, err := strconv.Atoi(arg); err == nil && n >= 1 && n <= len(u.resumeList) {
		id = string(u.resumeList[n-1].Header.ID)
	}
	if cur := u.cur.Load(); cur != nil && string(cur.sess.ID()) == id {
		u.tr.Note(u.st.Dim("that is the current session"))
		return
	}
	_ = u.switchTo(func(ctx context.Context) (*agent.Handle, error) { return u.app.Resume(ctx, session.ID(id), u) },
		"── resumed session "+id+" ──", hooks.EndResume)
}

// agoFrom formats a time before now: "just now", "5m ago", "3h ago",
// "2006-01-02".
func agoFrom(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	case d < 7*24*time.Hour:
		return fmt.Sprintf("%dd ago", int(d.Hours()/24))
	}
	return t.Format("2006-01-02")
}

// compactDone reports a /compact run.
type compactDone struct{ err error }

func (u *ui) compactCmd(focus string) {
	c := u.cur.Load()
	if u.app.Compactor == nil || c == nil {
		u.tr.Note(u.st.Dim("compaction is not available yet"))
		return
	}
	// Compaction calls the model: run it off the UI goroutine. Its
	// compact/* events render the progress and the outcome.
	go func() {
		_, err := u.app.Compactor.Compact(u.ctx, c.ag, focus)
		u.q.push(compactDone{err: err})
	}()
}

func (u *ui) compacted(m compactDone) {
	switch {
	case errors.Is(m.err, compact.ErrBusy):
		u.tr.Note(u.st.Dim("a turn is running: the conversation will be compacted before its next step"))
	case m.err != nil && (u.tr.LastCompactError == "" || !strings.Contains(m.err.Error(), u.tr.LastCompactError)):
		u.tr.Note(u.st.Err("compaction failed: " + sanitize(m.err.Error())))
	}
}

func (u *ui) mode() string {
	if u.app.Permission == nil {
		return ""
	}
	return string(u.app.Permission.Mode())
}

// shiftTabModes is what shift-tab cycles through. bypassPermissions is
// not among them: after plan mode shift-tab asks to confirm it (unless
// settings disable it), and any answer but y goes back to default.
var shiftTabModes = []permission.Mode{permission.ModeDefault, permission.ModeAcceptEdits, permission.ModePlan}

// cycleMode switches to the next permission mode (shift-tab).
func (u *ui) cycleMode() {
	p := u.app.Permission
	if p == nil {
		u.setHint("no permission layer is installed", 2*time.Second)
		return
	}
	cur := p.Mode()
	next := permission.ModeDefault
	if i := slices.Index(shiftTabModes, cur); i >= 0 && i+1 < len(shiftTabModes) {
		next = shiftTabModes[i+1]
	} else if cur == permission.ModePlan && p.BypassDisabled() == "" {
		u.bypassAsk = true
		return
	}
	u.setMode(next)
}

func (u *ui) setMode(m permission.Mode) {
	if err := u.app.Permission.SetMode(m); err != nil {
		u.setHint(err.Error(), 3*time.Second)
		return
	}
	u.setHint("permission mode: "+string(m), 2*time.Second)
}

// bypassKey answers the bypassPermissions confirmation: only y confirms.
func (u *ui) bypassKey(k Key) {
	u.bypassAsk = false
	if k.Kind == KeyRune && (k.Rune == 'y' || k.Rune == 'Y') {
		u.setMode(permission.ModeBypass)
		return
	}
	u.setMode(permission.ModeDefault)
}

func (u *ui) permissionsCmd(arg string) {
	p := u.app.Permission
	verb, rest, _ := strings.Cut(arg, " ")
	rest = strings.TrimSpace(rest)
	switch verb {
	case "":
	case "mode":
		if p == nil {
			u.tr.Note(u.st.Warn("no permission layer is installed"))
			return
		}
		if rest == "" || strings.ContainsAny(rest, " \t") {
			u.tr.Note(u.st.Warn(permissionsUsage))
			return
		}
		m, err := permission.ParseMode(rest)
		if err == nil {
			err = p.SetMode(m)
		}
		if err != nil {
			u.tr.Note(u.st.Err(err.Error()))
			return
		}
		u.tr.Note("permission mode: " + u.st.Bold(string(m)))
		return
	case "allow", "deny", "ask", "remove", "rm":
		if p == nil {
			u.tr.Note(u.st.Warn("no permission layer is installed"))
			return
		}
		if rest == "" {
			u.tr.Note(u.st.Warn(permissionsUsage))
			return
		}
		u.ruleCmd(p, verb, rest)
		return
	default:
		u.tr.Note(u.st.Warn(permissionsUsage))
		return
	}
	if p == nil {
		u.tr.Note("permission mode: default (no permission layer is installed)")
		return
	}
	var b strings.Builder
	b.WriteString("permission mode: " + u.st.Bold(string(p.Mode())) + u.st.Dim("  (switch: /permissions mode <m> or shift-tab; modes: "+permission.ModeNames()+")") + "\n")
	var id string
	if c := u.cur.Load(); c != nil {
		id = string(c.sess.ID())
	}
	rules := p.Rules(id)
	if len(rules) == 0 {
		b.WriteString(u.st.Dim("no rules: read-only tools run, edits and commands ask") + "\n")
	}
	// Grouped by behavior, strongest first: deny beats ask beats allow.
	groups := []struct {
		b     permission.Behavior
		title string
		style func(string) string
	}{
		{permission.Deny, "Deny", u.st.Err},
		{permission.Ask, "Ask", u.st.Warn},
		{permission.Allow, "Allow", u.st.OK},
	}
	for _, g := range groups {
		var rs []permission.Rule
		for _, r := range rules {
			if r.Behavior == g.b {
				rs = append(rs, r)
			}
		}
		if len(rs) == 0 {
			continue
		}
		b.WriteString(g.style(fmt.Sprintf("%s (%d)", g.title, len(rs))) + "\n")
		for _, r := range rs {
			src := r.Source
			if src == "" {
				src = "unknown source"
			}
			b.WriteString("  " + r.Text + u.st.Dim("  ("+shortPath(src, u.o.Env)+")") + "\n")
		}
	}
	if len(rules) > 0 {
		b.WriteString(u.st.Dim("add for this session: /permissions allow|ask|deny <rule> · withdraw: /permissions remove <rule>") + "\n")
	}
	for _, w := range p.Warnings() {
		b.WriteString(u.st.Warn(w) + "\n")
	}
	u.tr.Note(b.String())
}

var permissionsUsage = "usage: /permissions [mode " + strings.ReplaceAll(permission.ModeNames(), ", ", "|") + " | allow|ask|deny <rule> | remove <rule>]"

// ruleCmd adds or removes a session rule of the current session: it is
// recorded in the session's log, so a resumed session keeps it.
func (u *ui) ruleCmd(p *permission.Checker, verb, text string) {
	c := u.cur.Load()
	if c == nil {
		u.tr.Note(u.st.Err("no session: session rules need one (try /clear)"))
		return
	}
	if verb == "remove" || verb == "rm" {
		var removed []string
		for _, b := range []permission.Behavior{permission.Allow, permission.Ask, permission.Deny} {
			ok, err := p.RemoveSessionRule(u.ctx, c.sess, permission.Rule{Text: text, Behavior: b})
			if err != nil {
				u.tr.Note(u.st.Err("could not remove " + text + ": " + oneLine(err.Error())))
				return
			}
			if ok {
				removed = append(removed, string(b))
			}
		}
		if len(removed) == 0 {
			msg := "no session rule " + text
			for _, r := range p.Rules(string(c.sess.ID())) {
				if r.Text == strings.TrimSpace(text) && r.Source != permission.SourceSession {
					msg += " (it comes from " + r.Source + ": edit that file to remove it)"
					break
				}
			}
			u.tr.Note(u.st.Warn(msg))
			return
		}
		u.tr.Note("removed session rule " + u.st.Bold(strings.Join(removed, "/")+" "+text))
		return
	}
	b := permission.Behavior(verb)
	if err := p.AddSessionRule(u.ctx, c.sess, permission.Rule{Text: text, Behavior: b}); err != nil {
		u.tr.Note(u.st.Err("invalid rule: " + oneLine(err.Error())))
		return
	}
	u.tr.Note("added session rule " + u.st.Bold(verb+" "+text) + u.st.Dim("  (recorded in this session; kept on resume)"))
}

// oneLine joins a multi-line message into one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
