package memory

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/doctor"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/prompt"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

// Config configures the memory plugin. The zero value reads the site's
// locations: the user's home, $CODEX_HOME and $DSH_HOME.
type Config struct {
	// Locations override the site's, for embedders whose users keep their
	// files elsewhere; empty fields take the site's.
	Locations Locations
}

// EventNested records the directories whose nested memory files a session
// was given, so a resumed session is not given them again.
const EventNested = "memory/nested"

// Nested is the payload of EventNested.
type Nested struct {
	Dirs  []string `json:"dirs"`
	Files []string `json:"files,omitempty"`
}

// Section is the system prompt section's name and place: after the
// identity and environment, before tool guidance plugins add.
const (
	SectionName  = "memory"
	SectionOrder = 900
)

// Plugin is the memory capability: a system prompt section with the
// memory of each agent's working directory, nested memory files attached
// to the first tool result that touches their directory, and a doctor
// check listing every file found. It needs the doctor registry; at run
// time it consults the permission plugin's read filter, so a deny rule on
// reading a file also keeps it out of the prompt.
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
		if loc.CodexHome == "" {
			loc.CodexHome = h.Site.Env("CODEX_HOME")
		}
		if loc.DSHHome == "" {
			loc.DSHHome = h.Site.Home
		}
		l := &Loader{Locations: loc, Trusted: h.Site.TrustedDir}
		l.Withheld = func(path string) bool {
			rf, ok := core.Lookup[tool.ReadFilter](h)
			if !ok || rf == nil {
				return false
			}
			withheld := rf(context.Background(), tool.Call{Name: "read"})
			return withheld != nil && withheld(path)
		}
		cwdOf := func(ctx context.Context) string {
			if a, ok := agent.FromContext(ctx); ok {
				if c := a.Session().Cwd(); c != "" {
					return c
				}
			}
			return h.Site.Cwd
		}
		if err := scope.Add(h.Prompt.Section(prompt.Section{Name: SectionName, Order: SectionOrder, Dynamic: func(ctx context.Context) string {
			return l.Load(cwdOf(ctx)).Render()
		}})); err != nil {
			return err
		}
		n := &nester{l: l, sessions: map[string]map[string]bool{}}
		if err := scope.Add(h.Tools.PostExecute.Use(n.post, kernel.Named("memory"))); err != nil {
			return err
		}
		if err := scope.Add(h.Agents.Hub.Disposed.Listen(func(_ context.Context, a agent.Agent) error {
			n.mu.Lock()
			delete(n.sessions, string(a.Session().ID()))
			n.mu.Unlock()
			return nil
		}, kernel.Named("memory"))); err != nil {
			return err
		}
		return scope.Add(checks.Add("memory", func(context.Context) []doctor.Finding {
			return Findings(l.Load(h.Site.Cwd))
		}))
	}
}

// nester attaches nested memory files to the first tool result that
// touches their directory.
type nester struct {
	l        *Loader
	mu       sync.Mutex
	sessions map[string]map[string]bool // session → directories given
}

// touchTools are the tools whose file_path brings a directory's memory in.
var touchTools = map[string]bool{"read": true, "edit": true, "write": true}

func (n *nester) post(ctx context.Context, in tool.PostInput, next kernel.Next[tool.PostInput, tool.PostDecision]) (tool.PostDecision, error) {
	d, err := next(ctx, in)
	if err != nil || d.Block || !in.Ran || in.Result.IsError || !touchTools[in.Call.Name] || in.Call.Host == nil {
		return d, err
	}
	var args struct {
		FilePath string `json:"file_path"`
	}
	if json.Unmarshal(in.Call.Args, &args) != nil || args.FilePath == "" {
		return d, nil
	}
	host := in.Call.Host
	cwd := host.Cwd()
	p := args.FilePath
	if !filepath.IsAbs(p) {
		p = filepath.Join(cwd, p)
	}
	dir := filepath.Dir(filepath.Clean(p))
	if dir == cwd || !inside(cwd, dir) {
		return d, nil
	}
	// Claim the directories first, so two calls in parallel do not both
	// bring the same files in.
	given := n.given(host)
	var dirs []string
	n.mu.Lock()
	for _, x := range dirsDown(cwd, dir)[1:] {
		if !given[x] {
			given[x] = true
			dirs = append(dirs, x)
		}
	}
	n.mu.Unlock()
	if len(dirs) == 0 {
		return d, nil
	}
	claimed := map[string]bool{}
	for _, x := range dirs {
		claimed[x] = true
	}
	set := n.l.Nested(cwd, dir, func(x string) bool { return !claimed[x] })
	rec := Nested{Dirs: dirs}
	for _, f := range set.Files {
		rec.Files = append(rec.Files, f.Path)
	}
	_ = host.Append(ctx, EventNested, rec)
	text := set.RenderNested(dir)
	if text == "" {
		return d, nil
	}
	var blocks []llm.Block
	if d.Context != nil {
		blocks = append(blocks, d.Context.Content...)
	}
	d.Context = &tool.Context{Content: append(blocks, llm.Text(text)), Source: llm.PluginSource("memory")}
	return d, nil
}

// given returns the directories a session was given nested memory of,
// read from its log the first time (a resumed session). The map is
// guarded by n.mu.
func (n *nester) given(host tool.Host) map[string]bool {
	id := host.SessionID()
	n.mu.Lock()
	m, ok := n.sessions[id]
	n.mu.Unlock()
	if ok {
		return m
	}
	m = map[string]bool{}
	if a, ok := host.(agent.Agent); ok {
		// Released records come back in batched reads (a best effort: a
		// record that cannot be read is given again).
		_ = a.Session().Each(context.Background(), 0, func(e session.Event) bool { return e.Type == EventNested }, func(e session.Event) error {
			if rec, err := session.Decode[Nested](e); err == nil {
				for _, d := range rec.Dirs {
					m[d] = true
				}
			}
			return nil
		})
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if prev, ok := n.sessions[id]; ok {
		return prev
	}
	n.sessions[id] = m
	return m
}
