package skills

import (
	"context"
	"encoding/json"
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
	"github.com/dshq/dsh/permission"
	"github.com/dshq/dsh/prompt"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

// Locations says where the user's skill directories are.
type Locations struct {
	UserHome string // ~/.claude/skills
	DSHHome  string // $DSH_HOME/skills
}

// Config configures the skills plugin. Empty locations take the site's.
type Config struct {
	Locations Locations
}

// Extra is how other capabilities add skill directories (plugin bundles):
// a function of the working directory, provided on the host.
type Extra func(cwd string) []Dir

// ToolName is the skill tool's name (Claude Code calls it Skill).
const ToolName = "skill"

// Section is the system prompt section's name and place: after memory.
const (
	SectionName  = "skills"
	SectionOrder = 910
)

// Skills is what the plugin provides: the skill sets of working
// directories.
type Skills struct {
	h   *core.Host
	loc Locations

	mu     sync.Mutex
	cache  filestamp.Cache[*Set]
	active map[session.ID][]func() // releases of active skills' grants
}

// Plugin is the skills capability: the skill index in the system prompt,
// the skill tool, the grants of active skills, and a doctor check. It
// needs the doctor registry; it uses the permission checker at run time.
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
		s := &Skills{h: h, loc: loc, active: map[session.ID][]func(){}}
		cwdOf := func(ctx context.Context) string {
			if a, ok := agent.FromContext(ctx); ok {
				if c := a.Session().Cwd(); c != "" {
					return c
				}
			}
			return h.Site.Cwd
		}
		if err := scope.Add(h.Prompt.Section(prompt.Section{Name: SectionName, Order: SectionOrder, Dynamic: func(ctx context.Context) string {
			return s.For(cwdOf(ctx)).Index()
		}})); err != nil {
			return err
		}
		if err := h.Tools.RegisterAll(scope, s.tool()); err != nil {
			return err
		}
		if err := scope.Add(h.Sessions.Appended.Listen(s.appended, kernel.Named("skills"))); err != nil {
			return err
		}
		if err := scope.Add(checks.Add("skills", func(context.Context) []doctor.Finding { return s.findings(h.Site.Cwd) })); err != nil {
			return err
		}
		return core.Provide(h, scope, s)
	}
}

// Dirs are the skill directories of cwd, lowest precedence first.
func (s *Skills) Dirs(cwd string) []Dir {
	var dirs []Dir
	if extra, ok := core.Lookup[Extra](s.h); ok && extra != nil {
		dirs = append(dirs, extra(cwd)...)
	}
	if s.loc.UserHome != "" {
		dirs = append(dirs, Dir{Path: filepath.Join(s.loc.UserHome, ".claude", "skills"), Source: "user"})
	}
	if s.loc.DSHHome != "" {
		dirs = append(dirs, Dir{Path: filepath.Join(s.loc.DSHHome, "skills"), Source: "user"})
	}
	if s.h.Site.TrustedDir(cwd) {
		dirs = append(dirs, Dir{Path: filepath.Join(cwd, ".claude", "skills"), Source: "project"},
			Dir{Path: filepath.Join(cwd, ".dsh", "skills"), Source: "project"})
	}
	return dirs
}

// For returns the skills of a working directory, cached and checked
// against the folders' metadata on each call.
func (s *Skills) For(cwd string) *Set {
	return s.cache.Get(cwd, s.h.Site.TrustedDir(cwd), func() (*Set, filestamp.Set) {
		dirs := s.Dirs(cwd)
		return Load(dirs), stampsOf(dirs)
	})
}

// stampsOf records the directories, skill folders and SKILL.md files.
func stampsOf(dirs []Dir) filestamp.Set {
	var out filestamp.Set
	for _, d := range dirs {
		out = append(out, filestamp.Of(d.Path))
		entries, _ := os.ReadDir(d.Path)
		for _, e := range entries {
			out = append(out, filestamp.Of(filepath.Join(d.Path, e.Name(), "SKILL.md")))
		}
	}
	return out
}

type skillArgs struct {
	Skill string `json:"skill,omitempty" jsonschema:"the name of the skill to load, as the Skills list names it"`
	// Command is the older name of the argument (Claude Code's first
	// Skill tool).
	Command string `json:"command,omitempty" jsonschema:"the skill's name (older spelling of skill)"`
}

// skillSchema is skillArgs' JSON Schema, written out rather than inferred:
// inferring and marshalling it by reflection at every start was 120 KB of
// the start's allocations, which with the rest pushed a start past the
// runtime's first heap goal into a collection before the prompt
// (docs/benchmarks.md, start-up). TestSchemaMatchesTheArgumentType fails
// when the two part.
const skillSchema = `{"type":"object","properties":{"skill":{"type":"string","description":"the name of the skill to load, as the Skills list names it"},"command":{"type":"string","description":"the skill's name (older spelling of skill)"}},"additionalProperties":false}`

const toolDescription = `Load a skill: its instructions for a kind of task, which you then follow.
The system prompt lists the skills available here, each with a description. When the user's task matches one, call this tool with its name before doing the task, and follow what it says. Its supporting files (scripts, templates, references) are in the skill's folder: read or run them with the ordinary tools. A skill's allowed tools are allowed for the rest of this turn.`

func (s *Skills) tool() tool.Tool {
	info := tool.Info{Name: ToolName, Description: toolDescription, Parameters: json.RawMessage(skillSchema), Kind: tool.KindRead, ReadOnly: true, Concurrent: true}
	return tool.Func(info, func(ctx context.Context, call tool.Call, a skillArgs) (tool.Result, error) {
		name := strings.TrimSpace(a.Skill)
		if name == "" {
			name = strings.TrimSpace(a.Command)
		}
		name = strings.TrimPrefix(name, "/")
		cwd := s.h.Site.Cwd
		if call.Host != nil && call.Host.Cwd() != "" {
			cwd = call.Host.Cwd()
		}
		set := s.For(cwd)
		k, ok := set.Lookup(name)
		if !ok || k.Hidden {
			var names []string
			for _, x := range set.All() {
				if !x.Hidden {
					names = append(names, x.Name)
				}
			}
			if len(names) == 0 {
				return tool.Result{}, fmt.Errorf("no skill %q: there are no skills here", name)
			}
			return tool.Result{}, fmt.Errorf("no skill %q (the skills here: %s)", name, strings.Join(names, ", "))
		}
		body, err := k.Body()
		if err != nil {
			return tool.Result{}, fmt.Errorf("skill %s cannot be read: %v", name, err)
		}
		note := ""
		if len(k.AllowedTools) > 0 && call.Host != nil {
			granted, warnings := s.activate(call.Host.SessionID(), k)
			if len(granted) > 0 {
				note = "\n\nAllowed while this skill is active (until the end of this turn): " + strings.Join(granted, ", ")
			}
			for _, w := range warnings {
				note += "\n" + w
			}
		}
		return tool.TextResult(fmt.Sprintf("Skill %s is active.\nBase directory for this skill: %s\n\n%s%s", k.Name, k.Dir, body, note)), nil
	})
}

// activate grants a skill's allowed tools to a session until its turn
// ends; it returns the rules granted and warnings for those left out.
func (s *Skills) activate(sid string, k *Skill) (granted, warnings []string) {
	ch, ok := core.Lookup[*permission.Checker](s.h)
	if !ok {
		return nil, nil
	}
	for _, r := range k.AllowedTools {
		if err := permission.CheckRule(r, s.h.Site.UserHome); err != nil {
			warnings = append(warnings, fmt.Sprintf("(allowed tool %q is not a rule dsh can read; those calls ask as usual)", r))
			continue
		}
		granted = append(granted, r)
	}
	if len(granted) == 0 {
		return nil, warnings
	}
	release, err := ch.Grant(sid, "skill "+k.Name, granted)
	if err != nil {
		return nil, append(warnings, "(its allowed tools could not be granted: "+err.Error()+")")
	}
	s.mu.Lock()
	s.active[session.ID(sid)] = append(s.active[session.ID(sid)], release)
	s.mu.Unlock()
	return granted, warnings
}

// appended ends the session's active skills at the end of the turn.
func (s *Skills) appended(_ context.Context, ap session.Appended) error {
	if ap.Event.Type != session.TypeTurnEnd {
		return nil
	}
	s.mu.Lock()
	rs := s.active[ap.Session.ID()]
	delete(s.active, ap.Session.ID())
	s.mu.Unlock()
	for _, r := range rs {
		r()
	}
	return nil
}

func (s *Skills) findings(cwd string) []doctor.Finding {
	set := s.For(cwd)
	var out []doctor.Finding
	for _, k := range set.All() {
		msg := fmt.Sprintf("used: skill %s (%s)", k.Name, k.Source)
		if k.Hidden {
			msg += ", not offered to the model (disable-model-invocation)"
		}
		out = append(out, doctor.Finding{Severity: doctor.OK, Subject: k.Path, Message: msg})
		for _, r := range k.AllowedTools {
			if err := permission.CheckRule(r, s.h.Site.UserHome); err != nil {
				out = append(out, doctor.Finding{Severity: doctor.Warning, Subject: k.Path, Message: fmt.Sprintf("allowed tool %q is not a rule dsh can read; left out", r)})
			}
		}
	}
	for _, sh := range set.Shadowed {
		out = append(out, doctor.Finding{Severity: doctor.Info, Subject: sh.Path, Message: fmt.Sprintf("shadowed: skill %s is defined again by %s", sh.Name, sh.By)})
	}
	for _, p := range set.Problems {
		out = append(out, doctor.Finding{Severity: doctor.Warning, Subject: p.Path, Message: "skipped: malformed: " + p.Reason})
	}
	if !s.h.Site.TrustedDir(cwd) {
		for _, d := range []string{filepath.Join(cwd, ".claude", "skills"), filepath.Join(cwd, ".dsh", "skills")} {
			if st, err := os.Stat(d); err == nil && st.IsDir() {
				out = append(out, doctor.Finding{Severity: doctor.Warning, Subject: d, Message: "skipped: the project is not trusted yet",
					Fix: "trust the project (run dsh here interactively, or pass --trust)"})
			}
		}
	}
	return out
}
