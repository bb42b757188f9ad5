// Package prompt assembles the system prompt from ordered, named sections.
// A section's text is static or computed per request (project memory is
// re-read when its files change). Builders nest: a child (one per agent) sees its parent's
// sections, and a child section with the same name shadows the parent's
// while it is registered — so an agent can replace "persona" without
// touching other agents.
package prompt

import (
	"context"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
)

// Section is one named part of the system prompt. Lower Order comes first;
// equal orders keep registration order.
type Section struct {
	Name  string
	Order int
	Text  string
	// Dynamic, when set, computes the text for each request; empty text
	// drops the section.
	Dynamic func(ctx context.Context) string
}

// Assembly is one request's prompt: sections in order plus the tool schemas.
// Listeners of the Assemble point may add, drop or rewrite parts.
type Assembly struct {
	Sections []Section
	Tools    []llm.ToolSchema
}

// Render evaluates and joins the non-empty sections with blank lines, in
// the assembly's order.
func (a *Assembly) Render(ctx context.Context) string {
	var parts []string
	for _, s := range a.Sections {
		t := s.Text
		if s.Dynamic != nil {
			t = s.Dynamic(ctx)
		}
		if t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n\n")
}

// Builder holds sections and tool providers.
type Builder struct {
	parent *Builder
	mu     sync.RWMutex
	secs   []*entry
	tools  []*toolsEntry
	seq    int

	// Assemble lets plugins change a request's assembly.
	Assemble *kernel.Chain[*Assembly, *Assembly]
	// Changed fires when sections or tool providers change.
	Changed *kernel.Signal[struct{}]
}

type entry struct {
	sec Section
	seq int
}

type toolsEntry struct {
	fn func(ctx context.Context) []llm.ToolSchema
}

// New returns an empty root builder.
func New() *Builder {
	return &Builder{
		Assemble: kernel.NewChain[*Assembly, *Assembly]("system-prompt/assemble"),
		Changed:  kernel.NewSignal[struct{}]("system-prompt/change"),
	}
}

// Child returns a builder that inherits b's sections, tools and Assemble
// listeners (the parent's run outside the child's).
func (b *Builder) Child() *Builder {
	c := New()
	c.parent = b
	return c
}

// Section registers s and returns its disposer.
func (b *Builder) Section(s Section) (dispose func()) {
	b.mu.Lock()
	b.seq++
	e := &entry{sec: s, seq: b.seq}
	b.secs = append(b.secs, e)
	b.mu.Unlock()
	_ = b.Changed.Emit(context.Background(), struct{}{})
	return func() {
		b.mu.Lock()
		b.secs = slices.DeleteFunc(b.secs, func(x *entry) bool { return x == e })
		b.mu.Unlock()
		_ = b.Changed.Emit(context.Background(), struct{}{})
	}
}

// Tools registers a tool-schema provider (the agent's visible tools).
func (b *Builder) Tools(fn func(ctx context.Context) []llm.ToolSchema) (dispose func()) {
	t := &toolsEntry{fn: fn}
	b.mu.Lock()
	b.tools = append(b.tools, t)
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		b.tools = slices.DeleteFunc(b.tools, func(x *toolsEntry) bool { return x == t })
		b.mu.Unlock()
	}
}

// sections collects the effective sections: own ones shadow the parent's
// by name.
func (b *Builder) sections() []Section {
	var inherited []Section
	if b.parent != nil {
		inherited = b.parent.sections()
	}
	b.mu.RLock()
	own := make([]*entry, len(b.secs))
	copy(own, b.secs)
	b.mu.RUnlock()
	names := map[string]bool{}
	for _, e := range own {
		names[e.sec.Name] = true
	}
	out := make([]Section, 0, len(inherited)+len(own))
	for _, s := range inherited {
		if !names[s.Name] {
			out = append(out, s)
		}
	}
	for _, e := range own {
		out = append(out, e.sec)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Order < out[j].Order })
	return out
}

func (b *Builder) toolSchemas(ctx context.Context) []llm.ToolSchema {
	var out []llm.ToolSchema
	if b.parent != nil {
		out = b.parent.toolSchemas(ctx)
	}
	b.mu.RLock()
	ts := slices.Clone(b.tools)
	b.mu.RUnlock()
	for _, t := range ts {
		out = append(out, t.fn(ctx)...)
	}
	return out
}

// Build assembles the prompt for one request.
func (b *Builder) Build(ctx context.Context) (*Assembly, error) {
	a := &Assembly{Sections: b.sections(), Tools: b.toolSchemas(ctx)}
	return b.run(ctx, a)
}

func (b *Builder) run(ctx context.Context, a *Assembly) (*Assembly, error) {
	core := func(ctx context.Context, a *Assembly) (*Assembly, error) { return a, nil }
	if b.parent != nil {
		parent := b.parent
		inner := b.Assemble
		return parent.Assemble.Run(ctx, a, func(ctx context.Context, a *Assembly) (*Assembly, error) {
			return inner.Run(ctx, a, core)
		})
	}
	return b.Assemble.Run(ctx, a, core)
}
