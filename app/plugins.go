package app

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/dshq/dsh/bundles"
	"github.com/dshq/dsh/checkpoint"
	"github.com/dshq/dsh/commands"
	"github.com/dshq/dsh/compact"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/doctor"
	"github.com/dshq/dsh/dropin"
	"github.com/dshq/dsh/hooks"
	"github.com/dshq/dsh/hooks/transcript"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm/providers"
	"github.com/dshq/dsh/mcp"
	"github.com/dshq/dsh/memory"
	"github.com/dshq/dsh/permission"
	"github.com/dshq/dsh/prompt"
	sbplugin "github.com/dshq/dsh/sandbox/plugin"
	"github.com/dshq/dsh/settings"
	"github.com/dshq/dsh/skills"
	"github.com/dshq/dsh/store/backends"
	"github.com/dshq/dsh/store/postgres"
	"github.com/dshq/dsh/telemetry"
	"github.com/dshq/dsh/tools"
	"github.com/dshq/dsh/tools/task"
	"github.com/dshq/dsh/tools/webtool"
	webproviders "github.com/dshq/dsh/web/providers"
)

// Plugins is dsh's application: every capability, in the order it is
// installed. Each entry builds its plugin from the configuration through
// the capability's own constructor and config type.
//
// The order is part of the design, and [core.CheckOrder] enforces what the
// entries declare: a plugin comes after every plugin it Needs (it uses what
// they provide when it installs) and after the optional plugins it runs
// After (it uses them when they are on). TestPluginOrder fails when an entry
// is moved before one it needs, and when a declared need is not real.
//
//   - doctor first: capabilities add their health checks to its registry.
//   - store next: every session created from here on is persisted, and
//     the coordinator is the agents' loader.
//   - models before anything that names the model (hooks stamp it on
//     payloads).
//   - commands before hooks: its prompt-submit listener is outside the
//     hooks' (it grants a command's tools only for a prompt they let
//     through), and its request listener has the last word on the model
//     of a command's turn.
//   - compaction before the tools: the todo list is restated after a
//     summary swallowed it.
//   - sandbox before the tools: the shell executor runs commands through
//     it, and the permission layer asks it which calls it confines.
//   - tools, web, MCP and subagents register tools in the order the model
//     sees them.
//   - checkpoints after the tools and subagents: its tools/execute
//     wrapper records the workspace before a step's first change.
//   - hooks after the tools (they run commands on the local shell) and
//     after compaction and subagents (PreCompact, subagent start and end).
//   - permission last: its guard and pre-execute listener are prepended
//     when it installs, so being installed after hooks and MCP (which
//     prepend theirs too) makes it outermost. Hooks and plugins decide
//     first; it keeps the stricter verdict, and only an explicit hook
//     "allow" answers its ask.
//
// Optional plugins can be switched off with the settings key
// "enabledPlugins".
func Plugins() []core.Spec {
	return []core.Spec{
		{
			Name: "doctor", Doc: "the registry of health checks capabilities report to (dsh doctor)",
			New: func(*settings.Config) core.Plugin { return doctor.Plugin() },
		},
		{
			Name: "store", Doc: "the session store (under $DSH_HOME, or PostgreSQL) and the coordinator mirroring live sessions into it",
			After:    []string{"doctor"},
			Settings: settings.Schema{backends.Key, postgres.Key},
			New:      func(c *settings.Config) core.Plugin { return backends.Plugin(backends.FromSettings(c)) },
		},
		{
			Name: "models", Doc: "model adapters from the providers settings and API keys, aliases, the offline demo, the default model",
			Settings: providers.Keys,
			New:      func(c *settings.Config) core.Plugin { return providers.Plugin(providers.FromSettings(c)) },
		},
		{
			Name: "telemetry", Doc: "OpenTelemetry spans (turn, step, model call, tool call; GenAI conventions) and metrics, while a front door exports them", Optional: true,
			New: func(*settings.Config) core.Plugin { return telemetry.Plugin() },
		},
		{
			Name: "prompt", Doc: "the base system prompt: identity and environment",
			New: func(*settings.Config) core.Plugin { return basePrompt },
		},
		{
			Name: "memory", Doc: "project memory: CLAUDE.md, AGENTS.md and their relatives, @imports, nested files on first touch", Optional: true,
			Needs: []string{"doctor"},
			New:   func(*settings.Config) core.Plugin { return memory.Plugin(memory.Config{}) },
		},
		{
			Name: "bundles", Doc: "Claude Code plugins (.claude-plugin/plugin.json bundles) enabled in settings: their commands, skills, agents, hooks and MCP servers", Optional: true,
			Needs:    []string{"doctor"},
			Settings: settings.Schema{bundles.DirsKey},
			New: func(c *settings.Config) core.Plugin {
				return bundles.Plugin(bundles.Config{Dirs: bundles.DirsFromSettings(c)})
			},
		},
		{
			Name: "commands", Doc: "custom slash commands: .claude/commands, .dsh/commands, ~/.claude/commands, ~/.codex/prompts, plugin bundles' commands, and /init", Optional: true,
			Needs: []string{"doctor"},
			New:   func(*settings.Config) core.Plugin { return commands.Plugin(commands.Config{}) },
		},
		{
			Name: "compaction", Doc: "automatic context compaction before each step, and /compact",
			Settings: settings.Schema{compact.Settings},
			New:      func(c *settings.Config) core.Plugin { return compact.Plugin(compact.Settings.Get(c)) },
		},
		{
			Name: "sandbox", Doc: "the kernel sandbox bash commands run in (namespaces, Landlock, seccomp, the filtering proxy), and which calls it confines",
			Optional: true,
			Settings: settings.Schema{sbplugin.Key},
			New: func(c *settings.Config) core.Plugin {
				return sbplugin.Plugin(sbplugin.Config{Config: sbplugin.Key.Get(c)})
			},
		},
		{
			Name: "tools", Doc: "bash, read, write, edit, glob, grep, ls, todo_write", After: []string{"compaction", "sandbox"},
			New: func(c *settings.Config) core.Plugin {
				return tools.Plugin(tools.Config{Env: EnvKey.Get(c), ScrubEnv: providers.SecretEnvNames(providers.FromSettings(c))})
			},
		},
		{
			Name: "web", Doc: "web_fetch, and web_search when a search provider is available", Optional: true,
			Settings: settings.Schema{webproviders.Key},
			New: func(c *settings.Config) core.Plugin {
				return webtool.Plugin(webtool.PluginConfig{Config: webproviders.FromSettings(webproviders.Key.Get(c)), Env: EnvKey.Get(c)})
			},
		},
		{
			Name: "mcp", Doc: "the MCP client: configured servers' tools as mcp__<server>__<tool>", Optional: true,
			Needs: []string{"doctor"}, After: []string{"bundles"},
			Settings: settings.Schema{mcp.Key, mcp.StrictKey},
			New: func(c *settings.Config) core.Plugin {
				return mcp.Plugin(mcp.PluginConfig{Settings: c, Env: EnvKey.Get(c), Withhold: providers.SecretEnvNames(providers.FromSettings(c))})
			},
		},
		{
			Name: "subagents", Doc: "the subagent service and the task and fork tools, with custom agents", Optional: true,
			After: []string{"bundles"},
			New:   func(*settings.Config) core.Plugin { return task.Plugin() },
		},
		{
			Name: "skills", Doc: "skills: .claude/skills, .dsh/skills, ~/.claude/skills, plugin bundles' skills; the index in the prompt and the skill tool", Optional: true,
			Needs: []string{"doctor"},
			New:   func(*settings.Config) core.Plugin { return skills.Plugin(skills.Config{}) },
		},
		{
			Name: "checkpoints", Doc: "workspace checkpoints at every turn and step (under $DSH_HOME/checkpoints) and rewind of code and conversation",
			Optional: true,
			Settings: settings.Schema{checkpoint.Key},
			New: func(c *settings.Config) core.Plugin {
				cfg := checkpoint.Key.Get(c)
				cfg.Roots = permission.FromSettings(c).Roots
				return checkpoint.Plugin(cfg)
			},
		},
		{
			Name: "transcripts", Doc: "a Claude Code-format transcript of every session (hooks' transcript_path)",
			New: func(*settings.Config) core.Plugin { return transcript.Plugin() },
		},
		{
			Name: "hooks", Doc: "Claude Code and Codex hook files, and the hooks setting", Optional: true,
			Needs: []string{"doctor", "models", "tools", "transcripts"}, After: []string{"compaction", "subagents", "bundles"},
			Settings: settings.Schema{hooks.Key},
			New: func(c *settings.Config) core.Plugin {
				return hooks.Plugin(hooks.PluginConfig{Settings: c, Env: EnvKey.Get(c)})
			},
		},
		{
			Name: "permission", Doc: "permission modes and rules, outermost on tools/pre-execute; exit_plan_mode",
			After:    []string{"sandbox", "tools", "web", "mcp", "subagents", "hooks"},
			Settings: settings.Schema{permission.Key},
			New:      func(c *settings.Config) core.Plugin { return permission.Plugin(permission.FromSettings(c)) },
		},
	}
}

// The application's own settings keys: what no single capability owns.
var (
	// EnvKey is "env": variables added to the environment of commands,
	// hooks, MCP servers and web providers; merged by name.
	EnvKey = settings.Key[map[string]string]{Name: "env", Merge: settings.MergeMaps[map[string]string]}
	// SystemPromptKey is "appendSystemPrompt": text appended to every
	// agent's system prompt (--append-system-prompt adds to it); the
	// layers' texts are joined.
	SystemPromptKey = settings.Key[string]{Name: "appendSystemPrompt", Merge: settings.JoinText}
	// MaxStepsKey is "maxSteps": the most model calls one turn may make (0:
	// no limit). --max-turns sets it on the command line.
	MaxStepsKey = settings.Key[int]{Name: "maxSteps", Merge: settings.Latest[int], Validate: func(n int) error {
		if n < 0 {
			return fmt.Errorf("must not be negative")
		}
		return nil
	}}
	// EnabledPluginsKey is "enabledPlugins": optional plugins switched on or
	// off by name (default on).
	EnabledPluginsKey = settings.Key[map[string]bool]{Name: "enabledPlugins", Merge: settings.MergeMaps[map[string]bool], Validate: func(m map[string]bool) error {
		known := OptionalPlugins()
		for name := range m {
			if !slices.Contains(known, name) {
				return settings.Invalid(name, "unknown plugin (known: %s)", strings.Join(known, ", "))
			}
		}
		return nil
	}}
)

// OptionalPlugins names the plugins "enabledPlugins" can switch off.
func OptionalPlugins() []string {
	var out []string
	for _, s := range Plugins() {
		if s.Optional {
			out = append(out, s.Name)
		}
	}
	return out
}

// Schema is every settings key dsh reads: the application's own and its
// plugins'. Front doors pass it to [settings.Load].
func Schema() settings.Schema {
	return append(settings.Schema{EnvKey, SystemPromptKey, MaxStepsKey, EnabledPluginsKey, NotificationsKey, EditorModeKey}, core.Schema(Plugins())...)
}

// ForeignSettings are the other tools' settings files the pipeline reads
// as layers (Claude Code's, under dsh's own of the same standing): front
// doors pass them to [settings.Load] with [Schema].
func ForeignSettings(userHome, project string) []settings.Foreign {
	return dropin.ClaudeSettings(userHome, project)
}

// enabled reports whether the configuration leaves an optional plugin on.
func enabled(c *settings.Config) func(string) bool {
	m := EnabledPluginsKey.Get(c)
	return func(name string) bool {
		on, set := m[name]
		return !set || on
	}
}

const identity = `You are dsh, a coding agent working in the user's repository through tools.
Work in small verified steps: read before you edit, run the tests or the command that proves a change, and say plainly what you did not do.
Prefer the dedicated tools (read, edit, write, glob, grep, ls) over shell equivalents; use bash for builds, tests and git.
Keep answers short; use Markdown for code.`

// basePrompt is the system prompt every agent starts from: who it is and
// where it runs.
func basePrompt(_ context.Context, h *core.Host, scope *kernel.Scope) error {
	return scope.Effect(func(record func(func() error)) error {
		add := func(d func()) { record(func() error { d(); return nil }) }
		add(h.Prompt.Section(prompt.Section{Name: "identity", Order: 0, Text: identity}))
		add(h.Prompt.Section(prompt.Section{Name: "environment", Order: 10, Dynamic: func(context.Context) string {
			return fmt.Sprintf("Environment: working directory %s; platform %s/%s; today is %s.",
				h.Site.Cwd, runtime.GOOS, runtime.GOARCH, h.Now().Format("2006-01-02"))
		}}))
		return nil
	})
}
