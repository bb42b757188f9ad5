package commands

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/doctor"
	"github.com/dshq/dsh/internal/filestamp"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/permission"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

// Locations says where the user's command directories are.
type Locations struct {
	UserHome  string // ~/.claude/commands
	DSHHome   string // $DSH_HOME/commands
	CodexHome string // $CODEX_HOME/prompts (default ~/.codex)
}

// Config configures the commands plugin. Empty locations take the site's.
type Config struct {
	Locations Locations
}

// Extra is how other capabilities add command directories (plugin
// bundles): a function of the working directory, provided on the host.
type Extra func(cwd string) []Dir

//go:embed init.md
var initPrompt string

// Builtins are dsh's own commands: /init.
func Builtins() []*Command {
	c, err := Parse(initPrompt, "init", "", "built-in")
	if err != nil {
		panic("commands: the built-in /init does not parse: " + err.Error())
	}
	return []*Command{c}
}

// Commands is what the plugin provides: the command sets of working
// directories, and the preparation of a "/name args" line into the prompt
// an agent is sent.
type Commands struct {
	h        *core.Host
	loc      Locations
	builtins []*Command

	mu     sync.Mutex
	cache  filestamp.Cache[*Set]
	active map[session.ID]*turn
}

// turn is a command's hold on the turn that runs it.
type turn struct {
	release func()
	model   string
}

// Plugin is the commands capability: it provides [*Commands] to the front
// doors, grants a command's allowed tools for the turn that takes its
// prompt (and its model for that turn's requests), and reports every
// command file in dsh doctor. It needs the doctor registry; it uses the
// permission checker at run time, when one is installed.
func Plugin(cfg Config) core.Plugin {
	return func(_ context.Context, h *core.Host, scope *kernel.Scope) error {
		checks, err := core.Need[*doctor.Registry](h)
		if err != nil {
			return err
		}
		loc := cfg.Locations
		if loc.UserHome == "" {
			loc.UserHome = h.Site.UserHome
		}
		if loc.DSHHome == "" {
			loc.DSHHome = h.Site.Home
		}
		if loc.CodexHome == "" {
			loc.CodexHome = h.Site.Env("CODEX_HOME")
		}
		c := &Commands{h: h, loc: loc, builtins: Builtins(), active: map[session.ID]*turn{}}
		for _, d := range []func(){
			h.Agents.Hub.PromptSubmit.Use(c.promptSubmit, kernel.Named("commands")),
			h.Agents.Hub.Request.Use(c.request, kernel.Named("commands")),
			h.Sessions.Appended.Listen(c.appended, kernel.Named("commands")),
		} {
			if err := scope.Add(d); err != nil {
				return err
			}
		}
		if err := scope.Add(checks.Add("commands", func(context.Context) []doctor.Finding {
			return c.findings(h.Site.Cwd)
		})); err != nil {
			return err
		}
		return core.Provide(h, scope, c)
	}
}

// Dirs are the command directories of cwd, lowest precedence first.
func (c *Commands) Dirs(cwd string) []Dir {
	var dirs []Dir
	codex := c.loc.CodexHome
	if codex == "" && c.loc.UserHome != "" {
		codex = filepath.Join(c.loc.UserHome, ".codex")
	}
	if codex != "" {
		dirs = append(dirs, Dir{Path: filepath.Join(codex, "prompts"), Source: "Codex prompts", Prefix: "prompts:", Flat: true})
	}
	if extra, ok := core.Lookup[Extra](c.h); ok && extra != nil {
		dirs = append(dirs, extra(cwd)...)
	}
	if c.loc.UserHome != "" {
		dirs = append(dirs, Dir{Path: filepath.Join(c.loc.UserHome, ".claude", "commands"), Source: "user"})
	}
	if c.loc.DSHHome != "" {
		dirs = append(dirs, Dir{Path: filepath.Join(c.loc.DSHHome, "commands"), Source: "user"})
	}
	if c.h.Site.TrustedDir(cwd) {
		dirs = append(dirs,
			Dir{Path: filepath.Join(cwd, ".claude", "commands"), Source: "project"},
			Dir{Path: filepath.Join(cwd, ".dsh", "commands"), Source: "project"})
	}
	return dirs
}

// For returns the commands of a working directory. The set is cached and
// checked against the directories' and files' metadata on each call.
func (c *Commands) For(cwd string) *Set {
	return c.cache.Get(cwd, c.h.Site.TrustedDir(cwd), func() (*Set, filestamp.Set) {
		dirs := c.Dirs(cwd)
		return Load(c.builtins, dirs), stampsOf(dirs)
	})
}

// stampsOf records the directories and files a set was read from.
func stampsOf(dirs []Dir) filestamp.Set {
	var out filestamp.Set
	for _, d := range dirs {
		out = append(out, filestamp.Of(d.Path))
		_ = filepath.WalkDir(d.Path, func(path string, e os.DirEntry, err error) error {
			if err != nil || path == d.Path {
				return nil
			}
			if e.IsDir() && (d.Flat || strings.HasPrefix(e.Name(), ".")) {
				return filepath.SkipDir
			}
			out = append(out, filestamp.Of(path))
			return nil
		})
	}
	return out
}

// Prepared is a command line made into a prompt.
type Prepared struct {
	Command *Command
	// Content and Source are what the front door sends (Agent.Send).
	Content []llm.Block
	Source  llm.Source
	// Warnings are for the user (an allowed tool dsh cannot read).
	Warnings []string
}

// ErrNotCommand says a line does not name a custom command (the front door
// handles it otherwise: its own commands, or "unknown command").
var ErrNotCommand = errors.New("commands: not a custom command")

// Split reads "/name args" into the name and the argument line; ok is
// false for anything else (including "//literal").
func Split(line string) (name, args string, ok bool) {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "/") || strings.HasPrefix(line, "//") {
		return "", "", false
	}
	name, args, _ = strings.Cut(line[1:], " ")
	if name == "" {
		return "", "", false
	}
	return name, strings.TrimSpace(args), true
}

// Prepare expands a "/name args" line for agent a: the command's !`cmd`
// lines run and its @files are read now, through the tool pipeline as a
// (with a's approver, and the command's allowed tools granted while they
// run). ErrNotCommand: the line names no custom command.
func (c *Commands) Prepare(ctx context.Context, a agent.Agent, line string) (Prepared, error) {
	name, args, ok := Split(line)
	if !ok {
		return Prepared{}, ErrNotCommand
	}
	cwd := a.Session().Cwd()
	if cwd == "" {
		cwd = c.h.Site.Cwd
	}
	cmd, ok := c.For(cwd).Lookup(name)
	if !ok {
		return Prepared{}, ErrNotCommand
	}
	p := Prepared{Command: cmd}
	rules, warnings := c.usableRules(cmd)
	p.Warnings = warnings
	if len(rules) > 0 {
		if ch, ok := core.Lookup[*permission.Checker](c.h); ok {
			release, err := ch.Grant(string(a.Session().ID()), "command /"+cmd.Name, rules)
			if err != nil {
				return Prepared{}, err
			}
			defer release()
		}
	}
	host, ok := a.(tool.Host)
	if !ok {
		return Prepared{}, fmt.Errorf("commands: agent %s cannot run tools", a.ID())
	}
	text, err := cmd.Expand(ctx, args, &pipelineRunner{reg: c.h.Tools, host: host, approver: a.Options().Approver, cwd: cwd, name: cmd.Name})
	if err != nil {
		return Prepared{}, err
	}
	p.Content = []llm.Block{llm.Text(text)}
	p.Source = llm.Source{Kind: llm.SourceUser, Command: strings.TrimSpace(line)}
	return p, nil
}

// usableRules are the command's allowed tools dsh can read; the others are
// left out (with a warning), never granted more broadly.
func (c *Commands) usableRules(cmd *Command) (rules, warnings []string) {
	for _, r := range cmd.AllowedTools {
		if err := permission.CheckRule(r, c.h.Site.UserHome); err != nil {
			warnings = append(warnings, fmt.Sprintf("/%s: allowed tool %q is not a rule dsh can read (%s); those calls ask as usual", cmd.Name, r, strings.TrimPrefix(err.Error(), "permission: ")))
			continue
		}
		rules = append(rules, r)
	}
	return rules, warnings
}

// pipelineRunner runs a command's !`cmd` lines and reads its @files
// through the tool registry, as the agent.
type pipelineRunner struct {
	reg      *tool.Registry
	host     tool.Host
	approver tool.Approver
	cwd      string
	name     string
	n        int
}

func (r *pipelineRunner) call(ctx context.Context, name string, args any) (tool.Outcome, error) {
	r.n++
	b, _ := json.Marshal(args)
	out := r.reg.Execute(ctx, tool.Call{ID: llm.CallID(fmt.Sprintf("command-%s-%d", r.name, r.n)), Name: name, Args: b, Raw: string(b), Host: r.host},
		tool.ExecOptions{Approver: r.approver})
	switch {
	case out.Decision.Kind == tool.Deny:
		return out, errors.New(out.Decision.Reason)
	case out.Approval != nil && !out.Approval.Allow:
		return out, errors.New(out.Approval.Reason)
	}
	return out, nil
}

func (r *pipelineRunner) Shell(ctx context.Context, line string) (string, error) {
	out, err := r.call(ctx, "bash", map[string]string{"command": line, "description": "!`…` of /" + r.name})
	if err != nil {
		return "", err
	}
	// A command that ran and failed still tells the model something: its
	// output and status are inlined like any other.
	return llm.TextOf(out.Result.Content), nil
}

func (r *pipelineRunner) Read(ctx context.Context, path string) (string, bool, error) {
	p := path
	if strings.HasPrefix(p, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(h, p[2:])
		}
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(r.cwd, p)
	}
	if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
		return "", false, nil
	}
	out, err := r.call(ctx, "read", map[string]string{"file_path": p})
	if err != nil {
		return "", true, err
	}
	text := llm.TextOf(out.Result.Content)
	if out.Result.IsError {
		return "", true, errors.New(strings.TrimPrefix(text, "Error: "))
	}
	return text, true, nil
}

// promptSubmit gives the turn that takes a command's prompt the command's
// allowed tools and model.
func (c *Commands) promptSubmit(ctx context.Context, in agent.PromptInput, next kernel.Next[agent.PromptInput, agent.PromptDecision]) (agent.PromptDecision, error) {
	d, err := next(ctx, in)
	if err != nil || d.Block || in.Source.Command == "" || in.Agent == nil {
		return d, err
	}
	name, _, _ := Split(in.Source.Command)
	cwd := in.Agent.Session().Cwd()
	if cwd == "" {
		cwd = c.h.Site.Cwd
	}
	cmd, ok := c.For(cwd).Lookup(name)
	if !ok {
		return d, nil
	}
	sid := in.Agent.Session().ID()
	t := &turn{}
	if rules, _ := c.usableRules(cmd); len(rules) > 0 {
		if ch, ok := core.Lookup[*permission.Checker](c.h); ok {
			if release, err := ch.Grant(string(sid), "command /"+cmd.Name, rules); err == nil {
				t.release = release
			}
		}
	}
	if cmd.Model != "" {
		if id, _, ok := c.h.LLM.Resolve(cmd.Model); ok {
			t.model = id
		} else {
			c.h.Logger.Warn("commands: the model of a command is not available; the session's model answers", "command", cmd.Name, "model", cmd.Model)
		}
	}
	c.mu.Lock()
	if prev := c.active[sid]; prev != nil && prev.release != nil {
		prev.release()
	}
	c.active[sid] = t
	c.mu.Unlock()
	return d, nil
}

// request sets the model of a command's turn (last, over other listeners).
func (c *Commands) request(ctx context.Context, in agent.RequestInput, next kernel.Next[agent.RequestInput, *llm.Request]) (*llm.Request, error) {
	req, err := next(ctx, in)
	if err != nil || req == nil || in.Agent == nil {
		return req, err
	}
	c.mu.Lock()
	t := c.active[in.Agent.Session().ID()]
	c.mu.Unlock()
	if t != nil && t.model != "" {
		req.Model = t.model
	}
	return req, nil
}

// appended ends a command's hold when its turn ends.
func (c *Commands) appended(_ context.Context, ap session.Appended) error {
	if ap.Event.Type != session.TypeTurnEnd {
		return nil
	}
	c.mu.Lock()
	t := c.active[ap.Session.ID()]
	delete(c.active, ap.Session.ID())
	c.mu.Unlock()
	if t != nil && t.release != nil {
		t.release()
	}
	return nil
}

func (c *Commands) findings(cwd string) []doctor.Finding {
	set := c.For(cwd)
	var out []doctor.Finding
	for _, cmd := range set.All() {
		if cmd.Path == "" {
			continue
		}
		out = append(out, doctor.Finding{Severity: doctor.OK, Subject: cmd.Path, Message: fmt.Sprintf("used: /%s (%s)", cmd.Name, cmd.Source)})
		_, warnings := c.usableRules(cmd)
		for _, w := range warnings {
			out = append(out, doctor.Finding{Severity: doctor.Warning, Subject: cmd.Path, Message: w})
		}
	}
	for _, s := range set.Shadowed {
		where := s.Path
		if where == "" {
			where = "the built-in /" + s.Name
		}
		out = append(out, doctor.Finding{Severity: doctor.Info, Subject: where, Message: fmt.Sprintf("shadowed: /%s is defined again by %s", s.Name, s.By)})
	}
	for _, p := range set.Problems {
		out = append(out, doctor.Finding{Severity: doctor.Warning, Subject: p.Path, Message: "skipped: malformed: " + p.Reason})
	}
	if !c.h.Site.TrustedDir(cwd) {
		for _, d := range []string{filepath.Join(cwd, ".claude", "commands"), filepath.Join(cwd, ".dsh", "commands")} {
			if st, err := os.Stat(d); err == nil && st.IsDir() {
				out = append(out, doctor.Finding{Severity: doctor.Warning, Subject: d, Message: "skipped: the project is not trusted yet",
					Fix: "trust the project (run dsh here interactively, or pass --trust)"})
			}
		}
	}
	return out
}
