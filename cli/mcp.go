package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/bundles"
	"github.com/dshq/dsh/doctor"
	"github.com/dshq/dsh/llm/providers"
	"github.com/dshq/dsh/mcp"
	"github.com/dshq/dsh/permission/trust"
	"github.com/dshq/dsh/settings"
	"github.com/dshq/dsh/tool"
)

func init() { extraCommands = append(extraCommands, newMCPCmd) }

// newMCPCmd is `dsh mcp`: the Model Context Protocol servers.
func newMCPCmd(stdio IO) *cobra.Command {
	root := &cobra.Command{
		Use:   "mcp",
		Short: "inspect the configured MCP (Model Context Protocol) servers, or serve dsh as one",
		Long: `MCP servers are configured as in Claude Code: "mcpServers" in
~/.dsh/settings.json (or $DSH_HOME/settings.json), .dsh/settings.json,
.dsh/settings.local.json, and the project's .mcp.json. Project servers run
only in a trusted project.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var o mcpListOptions
	list := &cobra.Command{
		Use:   "list",
		Short: "list the configured MCP servers, their state and their tools",
		Long: `List every configured MCP server with where it was configured, its
state and its tools (as the model sees them: mcp__<server>__<tool>).
Servers are started to check them, unless --no-connect is given; then
lazy servers show the tool list cached from their last run.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runMCPList(cmd.Context(), stdio, o) },
	}
	fl := list.Flags()
	fl.BoolVar(&o.json, "json", false, "print JSON")
	fl.BoolVar(&o.noConnect, "no-connect", false, "do not start servers; show cached tool lists")
	fl.DurationVar(&o.timeout, "timeout", 30*time.Second, "how long to wait for each server to start")
	fl.StringVar(&o.settingsFile, "settings", "", "an extra settings file, applied last")
	fl.BoolVar(&o.trust, "trust", false, "trust this project's MCP servers and settings (recorded in $DSH_HOME/trust.json)")
	root.AddCommand(list, newMCPServeCmd(stdio))
	return root
}

type mcpListOptions struct {
	json         bool
	noConnect    bool
	trust        bool
	timeout      time.Duration
	settingsFile string
}

func runMCPList(ctx context.Context, stdio IO, o mcpListOptions) error {
	h, err := home(stdio.Env)
	if err != nil {
		return usageErr("%v", err)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return usageErr("cannot read the working directory: %v", err)
	}
	// Every layer is listed, the project's too: its servers carry their
	// directory and start only when the trust store says so (Trusted
	// below), so the listing shows what trusting the project would run.
	cfg, err := settings.Load(settings.Input{
		Paths:   settings.Paths{Home: h, Project: cwd, SettingsFile: o.settingsFile},
		Foreign: app.ForeignSettings(userHome(stdio.Env), cwd),
		Trust:   func(string) (bool, error) { return true, nil },
		Schema:  app.Schema(),
	})
	if err != nil {
		return usageErr("%v", strings.TrimPrefix(err.Error(), "settings: "))
	}
	// Plugin bundles' servers are listed as the project's are: all of them,
	// a project's starting only once it is trusted.
	var bundled []mcp.ServerConfig
	found := bundles.Find(bundles.Locations{UserHome: userHome(stdio.Env), Project: cwd, Dirs: bundles.DirsFromSettings(cfg)}, true)
	for _, b := range found.Bundles {
		bundled = append(bundled, bundles.Servers(b, cwd)...)
	}
	servers, sources, cfgErr := mcp.ConfiguredFrom(cfg, cwd, mcp.Homes{User: userHome(stdio.Env), Codex: stdio.Env("CODEX_HOME")}, bundled...)
	for _, s := range sources {
		for _, n := range s.Notes {
			fmt.Fprintf(stdio.Err, "dsh: warning: %s: %s\n", s.Path, n)
		}
	}
	for _, f := range found.Findings {
		if f.Severity == doctor.Warning {
			fmt.Fprintf(stdio.Err, "dsh: warning: plugins: %s (%s)\n", f.Message, f.Subject)
		}
	}
	if cfgErr != nil {
		for _, line := range strings.Split(cfgErr.Error(), "\n") {
			fmt.Fprintln(stdio.Err, "dsh: warning: "+line)
		}
	}
	// --trust records this project's trust, as for a run; without it a
	// project's servers are listed as untrusted until it is trusted.
	here, err := trust.Policy{Home: h, Grant: o.trust}.Decide(cwd)
	if err != nil {
		return usageErr("%v", err)
	}
	store := &trust.Store{Path: filepath.Join(h, trust.DefaultFile)}
	m, err := mcp.New(mcp.Options{
		Tools: tool.NewRegistry(),
		Home:  h,
		Cwd:   cwd,
		Trusted: func(dir string) bool {
			if dir == cwd {
				return here
			}
			ok, err := store.IsTrusted(dir, trust.ProjectFiles(dir)...)
			return err == nil && ok
		},
		Env: func(k string) (string, bool) {
			v := stdio.Env(k)
			return v, v != ""
		},
		Withhold:    providers.SecretEnvNames(providers.FromSettings(cfg)),
		MaxRestarts: -1, // report a failure at once
		NoConnect:   o.noConnect,
		// The default, so the deferred marks show what the model would get.
		ToolSearch:    mcp.ToolSearchAuto,
		ClientVersion: Version,
	})
	if err != nil {
		return err
	}
	defer m.Close()
	if err := m.Start(ctx, servers); err != nil {
		fmt.Fprintln(stdio.Err, "dsh: warning: "+err.Error())
	}
	if !o.noConnect {
		var wg sync.WaitGroup
		for _, s := range m.Servers() {
			switch s.State {
			case mcp.StateUntrusted, mcp.StateDisabled:
				continue
			}
			wg.Go(func() {
				cctx, cancel := context.WithTimeout(ctx, o.timeout)
				defer cancel()
				_ = m.Connect(cctx, s.Name)
			})
		}
		wg.Wait()
	}
	sts := m.Servers()
	if o.json {
		if sts == nil {
			sts = []mcp.ServerStatus{}
		}
		enc := json.NewEncoder(stdio.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(sts)
	}
	printMCPList(stdio.Out, sts, h)
	return nil
}

func printMCPList(w io.Writer, sts []mcp.ServerStatus, home string) {
	if len(sts) == 0 {
		fmt.Fprintf(w, "No MCP servers configured. Add them under \"mcpServers\" in %s or in the project's %s.\n",
			filepath.Join(home, "settings.json"), mcp.ProjectFile)
		return
	}
	for i, s := range sts {
		if i > 0 {
			fmt.Fprintln(w)
		}
		where := s.Source
		if s.Path != "" {
			where += " " + s.Path
		}
		fmt.Fprintf(w, "%s  %s %s  (%s)\n", s.Name, s.Transport, s.Target, where)
		state := string(s.State)
		switch {
		case s.FromCache:
			state += ", starts on first use"
		case s.State == mcp.StateIdle:
			state += ", not started, no cached tool list"
		case s.State == mcp.StateConnected && s.PID > 0:
			state += fmt.Sprintf(", pid %d", s.PID)
		}
		line := fmt.Sprintf("  %s · %s", state, toolCount(len(s.Tools)))
		if s.Error != "" {
			line += " · " + s.Error
		}
		fmt.Fprintln(w, line)
		for _, t := range s.Tools {
			var tags []string
			if t.ReadOnly {
				tags = append(tags, "read-only")
			}
			if t.Deferred {
				tags = append(tags, "via mcp_tool_search")
			}
			tag := ""
			if len(tags) > 0 {
				tag = " [" + strings.Join(tags, ", ") + "]"
			}
			fmt.Fprintf(w, "    %s%s  %s\n", t.Name, tag, firstLine(t.Description, 72))
		}
	}
}

func toolCount(n int) string {
	if n == 1 {
		return "1 tool"
	}
	return fmt.Sprintf("%d tools", n)
}

func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
