package hooks

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/bash/local"
	"github.com/dshq/dsh/compact"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/doctor"
	"github.com/dshq/dsh/hooks/transcript"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm/providers"
	"github.com/dshq/dsh/permission"
	"github.com/dshq/dsh/sandbox"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/settings"
	"github.com/dshq/dsh/subagent"
	"github.com/dshq/dsh/tool"
)

// Key is dsh's own "hooks" setting, in Claude Code's format (event name →
// matcher groups); layers concatenate their groups per event. Groups are
// decoded by the bridge, with the file they came from.
var Key = settings.Key[map[string]json.RawMessage]{Name: "hooks", Merge: func(lower, higher map[string]json.RawMessage) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(lower)+len(higher))
	for ev, raw := range lower {
		out[ev] = raw
	}
	for ev, raw := range higher {
		out[ev] = concatJSONArrays(out[ev], raw)
	}
	return out
}}

// concatJSONArrays joins two JSON arrays (matcher groups); a non-array b
// replaces a.
func concatJSONArrays(a, b json.RawMessage) json.RawMessage {
	var xa, xb []json.RawMessage
	if json.Unmarshal(b, &xb) != nil {
		return b
	}
	if len(a) > 0 && json.Unmarshal(a, &xa) != nil {
		return b
	}
	out, _ := json.Marshal(append(xa, xb...))
	return out
}

// PluginConfig configures the hooks plugin.
type PluginConfig struct {
	// Settings are the layers dsh's own "hooks" key is read from (nil:
	// only the hook files of each dialect).
	Settings *settings.Config
	// Env is added to every hook's environment (settings "env").
	Env map[string]string
}

// Bridges is what the hooks plugin provides: one bridge per dialect.
type Bridges struct {
	Claude, Codex *Bridge
}

// Approver wraps a front-end's approver so PermissionRequest hooks
// (Claude Code's, then Codex's) see every question first.
func (bs *Bridges) Approver(inner tool.Approver) tool.Approver {
	for _, b := range []*Bridge{bs.Codex, bs.Claude} {
		if b != nil {
			inner = b.Approver(inner)
		}
	}
	return inner
}

// SetEndReason records why an agent's session ends (clear, resume,
// logout, prompt_input_exit) for its SessionEnd hooks.
func (bs *Bridges) SetEndReason(id agent.ID, reason string) {
	for _, b := range []*Bridge{bs.Claude, bs.Codex} {
		if b != nil {
			b.SetEndReason(id, reason)
		}
	}
}

// Plugin is the hooks capability: a [Bridge] for Claude Code's and one for
// Codex's hook files (plus dsh's own "hooks" setting, in Claude's format),
// read per working directory so sessions of other projects get their own.
// It needs the doctor registry (it reports unreadable hook files and hooks
// it does not run), the transcripts (transcript_path), the local shell
// executor (the tools plugin) and the model (the models plugin; prompt
// hooks ask it too); it uses the compactor and the subagent service when
// those plugins are on. Payloads carry the session's permission mode, read
// at run time from the permission plugin (installed after this one, so
// its listener is outermost).
func Plugin(cfg PluginConfig) core.Plugin {
	return func(_ context.Context, h *core.Host, scope *kernel.Scope) error {
		exec, err := core.Need[*local.Executor](h)
		if err != nil {
			return err
		}
		models, err := core.Need[providers.Selection](h)
		if err != nil {
			return err
		}
		checks, err := core.Need[*doctor.Registry](h)
		if err != nil {
			return err
		}
		transcripts, err := core.Need[*transcript.Writer](h)
		if err != nil {
			return err
		}
		comp, _ := core.Lookup[*compact.Compactor](h)
		runner := Runner{Exec: exec, Prompt: ModelPrompter(h.LLM)}
		if o, ok := core.Lookup[*sandbox.Others](h); ok && o.Hook != nil {
			runner.Sandbox = o.Hook // sandbox.hooks: command hooks run sandboxed
		}
		subs, _ := core.Lookup[*subagent.Service](h)
		mode := func(id session.ID) string {
			if c, ok := core.Lookup[*permission.Checker](h); ok {
				return string(c.SessionMode(string(id)))
			}
			return string(permission.ModeDefault)
		}
		cwd := h.Site.Cwd
		layers := Key.Layers(cfg.Settings)
		extra, _ := core.Lookup[Extra](h)
		var out Bridges
		for _, dialect := range []string{Claude, Codex} {
			var mu sync.Mutex
			cache := map[string]*Config{}
			load := func(dir string) *Config {
				mu.Lock()
				defer mu.Unlock()
				if c, ok := cache[dir]; ok {
					return c
				}
				user, proj := Files(dialect, h.Site.UserHome, dir)
				c := Load(dialect, user, proj)
				if dialect == Claude {
					for _, v := range layers {
						if len(v.Value) == 0 {
							continue
						}
						project := v.Layer.Project()
						if project && dir != cwd {
							continue // another project's settings do not apply here
						}
						c.AddRaw(v.Path, v.Value, project)
					}
					if extra != nil {
						for _, f := range extra(dir) {
							c.AddExtra(f)
						}
					}
				}
				cache[dir] = &c
				return &c
			}
			b := New(Options{
				Dialect: dialect, Config: load, Runner: runner,
				Trusted: h.Site.TrustedDir, Logger: h.Logger, Model: models.Model, Mode: mode, Env: cfg.Env,
				TranscriptPath: transcripts.Path, Warn: h.Site.Warn, Stopping: h.Site.Stopping, Aborting: h.Site.Aborting,
			}, h.Agents)
			if err := b.Install(scope, h.Tools, h.Sessions, comp); err != nil {
				return err
			}
			// Problems with this directory's hook files (an unsupported hook
			// type, a file that is not JSON) are reported now, not when the
			// event first fires.
			b.Check(cwd)
			if err := scope.Add(checks.Add("hooks", func(context.Context) []doctor.Finding {
				return load(cwd).Findings(h.Site.TrustedDir(cwd))
			})); err != nil {
				return err
			}
			if subs != nil {
				if err := b.InstallSubagents(scope, subs.Started, subs.Ended); err != nil {
					return err
				}
			}
			if dialect == Claude {
				out.Claude = b
			} else {
				out.Codex = b
			}
		}
		return core.Provide(h, scope, &out)
	}
}
