package cli

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/bundles"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/llm/providers"
	"github.com/dshq/dsh/mcp"
	"github.com/dshq/dsh/permission"
	"github.com/dshq/dsh/permission/trust"
	sbplugin "github.com/dshq/dsh/sandbox/plugin"
	"github.com/dshq/dsh/settings"
)

// configFlags are the flags that feed the configuration pipeline. dsh (the
// terminal and -p) and dsh acp take the same ones, with Claude Code's
// names, so one command line means the same in every front door.
type configFlags struct {
	model              string
	permissionMode     string
	allowedTools       []string
	disallowedTools    []string
	appendSystemPrompt string
	maxTurns           int
	settingsFile       string
	addDirs            []string
	trust              bool
	verbose            bool
	sandbox            string
	strictMCP          bool
	pluginDirs         []string
}

// register adds the flags to fl; acp says which front door they serve.
func (f *configFlags) register(fl *pflag.FlagSet, acp bool) {
	modelHelp, trustHelp := "model reference, provider/model (e.g. deepseek/deepseek-chat) or an alias",
		"trust this project's settings, hooks and MCP servers (recorded in $DSH_HOME/trust.json)"
	if acp {
		modelHelp = "default model of new sessions, provider/model or an alias (editors can switch per session)"
		trustHelp = "trust the settings, hooks and MCP servers of the projects the editor opens (recorded in $DSH_HOME/trust.json)"
	}
	fl.StringVar(&f.model, "model", "", modelHelp)
	fl.StringVar(&f.permissionMode, "permission-mode", "", "starting permission mode: "+permission.ModeNames())
	stringArrayVar(fl, &f.allowedTools, "allowedTools", "permission rules that allow without asking (e.g. \"Read Bash(git diff:*)\")")
	stringArrayVar(fl, &f.disallowedTools, "disallowedTools", "permission rules that deny (e.g. \"Bash(rm:*)\")")
	fl.StringVar(&f.appendSystemPrompt, "append-system-prompt", "", "text appended to the system prompt")
	fl.IntVar(&f.maxTurns, "max-turns", 0, "the most model calls (steps) one turn may make; Claude Code's name for a step limit")
	fl.StringVar(&f.settingsFile, "settings", "", "an extra settings file, applied last")
	stringSliceVar(fl, &f.addDirs, "add-dir", "additional directories the tools may use")
	fl.BoolVar(&f.trust, "trust", false, trustHelp)
	fl.BoolVar(&f.verbose, "verbose", false, "log debug details to the log file")
	fl.BoolVar(&f.strictMCP, "strict-mcp-config", false, "use only the MCP servers given for this run (--mcp-config, or an editor's), none from settings files or .mcp.json")
	stringArrayVar(fl, &f.pluginDirs, "plugin-dir", "a Claude Code plugin directory (.claude-plugin/plugin.json and its commands, skills, agents, hooks, .mcp.json) to use in this run")
	fl.StringVar(&f.sandbox, "sandbox", "", "sandbox mode of bash commands: read-only, workspace-write (the default) or danger-full-access")
}

// layers turns the flags into command-line settings layers: each flag is
// the value of the key its capability reads, so it merges (and is
// validated) like a settings file above all the others.
func (f *configFlags) layers() ([]settings.File, error) {
	out, err := permission.Flags(f.permissionMode, f.allowedTools, f.disallowedTools, f.addDirs)
	if err != nil {
		return nil, err
	}
	if f.model != "" {
		out = append(out, providers.ModelKey.Flag("--model", f.model))
	}
	if f.sandbox != "" {
		l, err := sbplugin.Flag(f.sandbox)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	if len(f.pluginDirs) > 0 {
		out = append(out, bundles.DirsKey.Flag("--plugin-dir", f.pluginDirs))
	}
	if f.strictMCP {
		out = append(out, mcp.StrictKey.Flag("--strict-mcp-config", true))
	}
	if f.appendSystemPrompt != "" {
		out = append(out, app.SystemPromptKey.Flag("--append-system-prompt", f.appendSystemPrompt))
	}
	if f.maxTurns < 0 {
		return nil, fmt.Errorf("--max-turns must not be negative")
	}
	if f.maxTurns > 0 {
		out = append(out, app.MaxStepsKey.Flag("--max-turns", f.maxTurns))
	}
	return out, nil
}

// trustPolicy is the pipeline's trust step for these flags: interactive
// runs ask once per change of a project's files; headless and ACP runs need
// --trust (which records it) or an earlier answer.
func (f *configFlags) trustPolicy(stdio IO, home string, interactive bool) trust.Policy {
	p := trust.Policy{Home: home, Grant: f.trust, Ignored: func(string) {
		fmt.Fprintf(stdio.Err, "dsh: ignoring this project's settings, hooks and MCP servers until you trust it (run dsh interactively, or pass --trust)\n")
	}}
	if interactive {
		p.Ask = func(project string) bool {
			fmt.Fprintf(stdio.Err, "This folder has its own dsh/Claude/Codex settings, hooks or MCP servers:\n  %s\nThey can run commands on your machine. Trust this folder? [y/N] ", project)
			line, _ := bufio.NewReader(stdio.In).ReadString('\n')
			return strings.HasPrefix(strings.ToLower(strings.TrimSpace(line)), "y")
		}
	}
	return p
}

// configure runs the configuration pipeline for project ("" for the
// user's layers only): settings files, trust, flags, extra layers. It
// returns the configuration and the site's trust function: the project's
// own decision for itself, the stored answer for any other directory (a
// session resumed from elsewhere is trusted by that directory's trust,
// never this one's).
func (f *configFlags) configure(home, userHome, project string, policy trust.Policy, extra ...settings.File) (*settings.Config, func(string) bool, error) {
	flags, err := f.layers()
	if err != nil {
		return nil, nil, err
	}
	in := settings.Input{
		Paths:   settings.Paths{Home: home, Project: project, SettingsFile: f.settingsFile},
		Foreign: app.ForeignSettings(userHome, project),
		Flags:   append(flags, extra...),
		Schema:  app.Schema(),
	}
	if project != "" {
		in.Trust = policy.Decide
	}
	cfg, err := settings.Load(in)
	if err != nil {
		return nil, nil, err
	}
	trusted := func(dir string) bool {
		if dir == cfg.Project() {
			return cfg.Trusted()
		}
		return policy.Stored(dir)
	}
	return cfg, trusted, nil
}

// site is where an app of this process runs.
func site(stdio IO, home, cwd string, trusted func(string) bool) core.Site {
	return core.Site{Home: home, Cwd: cwd, UserHome: userHome(stdio.Env), Getenv: stdio.Env, Trusted: trusted}
}
