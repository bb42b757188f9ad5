package task

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/subagent"
	"github.com/dshq/dsh/tool"
)

// Catalog is the custom agents the task tool offers (subagent_type): the
// definition files at start, and agents a front door defines inline later
// (dsh --agents JSON, the Claude Agent SDK's initialize). The tool's
// description lists them, so adding agents registers the tool anew.
type Catalog struct {
	reg    *tool.Registry
	svc    *subagent.Service
	agents *agent.Registry

	mu      sync.Mutex
	defs    []subagent.Definition
	dispose func()
}

func newCatalog(reg *tool.Registry, svc *subagent.Service, agents *agent.Registry, defs []subagent.Definition) (*Catalog, error) {
	c := &Catalog{reg: reg, svc: svc, agents: agents, defs: sorted(defs)}
	if err := c.register(); err != nil {
		return nil, err
	}
	return c, nil
}

// Definitions returns the agents the task tool offers, by name.
func (c *Catalog) Definitions() []subagent.Definition {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.defs)
}

// Add makes more agents available; one with a name already known replaces
// it (inline definitions win over files).
func (c *Catalog) Add(defs ...subagent.Definition) error {
	c.mu.Lock()
	merged := slices.DeleteFunc(slices.Clone(c.defs), func(d subagent.Definition) bool {
		return slices.ContainsFunc(defs, func(n subagent.Definition) bool { return n.Name == d.Name })
	})
	c.defs = sorted(append(merged, defs...))
	c.mu.Unlock()
	return c.register()
}

// register (re)registers the task tool with the current definitions.
func (c *Catalog) register() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dispose != nil {
		c.dispose()
		c.dispose = nil
	}
	d, err := c.reg.Register(Tool("task", "spawn", c.svc, c.agents, c.defs))
	if err != nil {
		return fmt.Errorf("task: %w", err)
	}
	c.dispose = d
	return nil
}

func (c *Catalog) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dispose != nil {
		c.dispose()
		c.dispose = nil
	}
	return nil
}

func sorted(defs []subagent.Definition) []subagent.Definition {
	slices.SortFunc(defs, func(a, b subagent.Definition) int { return strings.Compare(a.Name, b.Name) })
	return defs
}
