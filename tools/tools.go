// Package tools is the workspace tools capability: the shell (bash,
// bash_output, bash_kill), files (read, write, edit), search (glob, grep,
// ls) and the todo list, registered as one plugin. The web tools are the
// web plugin's ([github.com/dshq/dsh/web/providers]), the task and fork
// tools the subagents plugin's.
package tools

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/dshq/dsh/bash"
	"github.com/dshq/dsh/bash/local"
	"github.com/dshq/dsh/compact"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/fs"
	fslocal "github.com/dshq/dsh/fs/local"
	"github.com/dshq/dsh/fs/policy"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
	"github.com/dshq/dsh/tools/bashtool"
	"github.com/dshq/dsh/tools/fstool"
	"github.com/dshq/dsh/tools/searchtool"
	"github.com/dshq/dsh/tools/todo"
)

// Config configures the workspace tools.
type Config struct {
	// Env is added to every command's environment (settings "env").
	Env map[string]string
	// ScrubEnv names variables commands never see (the model providers'
	// key variables), whatever else the environment holds.
	ScrubEnv []string
}

// Plugin registers the workspace tools on the site's working directory,
// through the site's WrapFS and WrapExec when set. It provides the local
// shell executor (*local.Executor), which hooks run their commands on.
//
// Two uses of plugins listed later happen at run time, not at install:
// the search tools leave out the files a [tool.ReadFilter] (the
// permission plugin's) withholds, and when a compaction summary swallows
// the last todo_write of an unfinished list, the list is restated (the
// compaction plugin, listed before, provides the compactor).
func Plugin(cfg Config) core.Plugin {
	return func(_ context.Context, h *core.Host, scope *kernel.Scope) error {
		sb, _ := core.Lookup[*bashtool.Sandbox](h) // the sandbox plugin's, when on
		lc := local.Config{Logger: h.Logger, ScrubEnv: cfg.ScrubEnv}
		if sb != nil {
			lc.Sandbox = sb.Sandbox
		}
		exec, err := local.New(lc)
		if err != nil {
			return fmt.Errorf("tools: bash executor: %w", err)
		}
		if err := scope.Defer(exec.Close); err != nil {
			return err
		}
		fsp, err := fslocal.New(fslocal.Options{Cwd: h.Site.Cwd})
		if err != nil {
			return fmt.Errorf("tools: filesystem: %w", err)
		}
		var runner bash.Executor = exec
		if h.Site.WrapExec != nil {
			runner = h.Site.WrapExec(runner)
		}
		var files fs.Provider = fsp
		if h.Site.WrapFS != nil {
			files = h.Site.WrapFS(files)
		}
		var list []tool.Tool
		list = append(list, bashtool.Tools(runner, bashtool.Options{Logger: h.Logger, Env: maps.Clone(cfg.Env), Sandbox: sb})...)
		// The file the permission plugin decided on is the file the file
		// tools use (symbolic and hard links included).
		list = append(list, fstool.Tools(files, policy.New(), fstool.Options{Confirm: func(ctx context.Context, call tool.Call, key string, id fs.FileID) error {
			if f, ok := core.Lookup[tool.FileConfirm](h); ok {
				return f(ctx, call, key, id)
			}
			return nil
		}})...)
		// Searches are decided by the directory they name; the files in it
		// that permission rules deny reading are left out of their results.
		list = append(list, searchtool.Tools(searchtool.Options{Denied: func(ctx context.Context, call tool.Call) func(string) bool {
			if f, ok := core.Lookup[tool.ReadFilter](h); ok {
				return f(ctx, call)
			}
			return nil
		}})...)
		list = append(list, todo.New())
		if err := h.Tools.RegisterAll(scope, list...); err != nil {
			return err
		}
		if c, ok := core.Lookup[*compact.Compactor](h); ok {
			if err := scope.Add(c.Done.Listen(restateTodos, kernel.Named("todo"))); err != nil {
				return err
			}
		}
		return core.Provide(h, scope, exec)
	}
}

// restateTodos restates an unfinished todo list a summary swallowed.
func restateTodos(ctx context.Context, out compact.Outcome) error {
	if out.Err != nil || !out.Summarized || out.Agent == nil {
		return nil
	}
	// The newest todo list that decodes, found backwards without copying
	// the log (a long session's Events is megabytes at every compaction).
	var writes []session.Event
	s := out.Agent.Session()
	s.Backward(int64(s.Len()), func(e session.Event) bool {
		if e.Type != todo.EventTodoWrite {
			return true
		}
		writes = append(writes, e)
		_, err := session.Decode[todo.Write](e) // reads back what was released
		return err != nil                       // a damaged one: look further back
	})
	slices.Reverse(writes)
	text := todo.Restate(writes, out.Shadowed.End)
	if text == "" {
		return nil
	}
	return out.Agent.Inject(ctx, []llm.Block{llm.Text(text)}, llm.PluginSource(todo.Name))
}
