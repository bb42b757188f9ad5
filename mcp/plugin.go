package mcp

import (
	"context"
	"fmt"
	"os"

	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/doctor"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/sandbox"
	"github.com/dshq/dsh/settings"
)

// PluginConfig configures the MCP plugin.
type PluginConfig struct {
	// Settings are the layers "mcpServers" is read from (see
	// [Configured]); nil configures no server.
	Settings *settings.Config
	// Env is the settings "env", added to every stdio server's
	// environment.
	Env map[string]string
	// Withhold names the variables kept from stdio servers (see
	// [Options.Withhold]); the application passes the providers' API key
	// variables.
	Withhold []string
}

// Extra is how other capabilities add servers (plugin bundles' .mcp.json):
// a function of the working directory, provided on the host before this
// plugin installs. Its servers rank below every configuration file.
type Extra func(cwd string) []ServerConfig

// Plugin is the MCP client capability: one [Manager] for the configured
// servers of the site's working directory, provided to later plugins and
// front doors (ACP sessions add their own servers to it), with its servers'
// states in the doctor registry. Servers start lazily or in the
// background, never holding the first prompt up; a failed start is
// reported through the site's Warn (stderr in headless runs);
// misconfigured ones are skipped with a warning in the log.
func Plugin(cfg PluginConfig) core.Plugin {
	return func(ctx context.Context, h *core.Host, scope *kernel.Scope) error {
		checks, err := core.Need[*doctor.Registry](h)
		if err != nil {
			return err
		}
		environ := os.Environ()
		for k, v := range cfg.Env {
			environ = append(environ, k+"="+v)
		}
		log := h.Logger.With("component", "mcp")
		o := Options{
			Tools: h.Tools, Prompt: h.Prompt, Home: h.Site.Home, Cwd: h.Site.Cwd, Trusted: h.Site.TrustedDir,
			Env:      func(k string) (string, bool) { v := h.Site.Env(k); return v, v != "" },
			Environ:  environ,
			Withhold: cfg.Withhold,
			Logger:   log,
			Warn:     h.Site.Warn,
			Secrets:  h.Secrets.Add,
		}
		if sb, ok := core.Lookup[*sandbox.Others](h); ok && sb.MCP != nil {
			o.Sandbox, o.SandboxPolicy = sb.Sandbox, sb.MCP // sandbox.mcp: stdio servers run sandboxed
		}
		m, err := New(o)
		if err != nil {
			return fmt.Errorf("mcp: %w", err)
		}
		if err := scope.Defer(m.Close); err != nil {
			return err
		}
		var extra []ServerConfig
		if f, ok := core.Lookup[Extra](h); ok && f != nil {
			extra = f(h.Site.Cwd)
		}
		servers, sources, err := ConfiguredFrom(cfg.Settings, h.Site.Cwd, Homes{User: h.Site.UserHome, Codex: h.Site.Env("CODEX_HOME")}, extra...)
		read := SourceFindings(sources)
		for _, s := range sources {
			for _, n := range s.Notes {
				h.Logger.Warn("mcp: "+n, "file", s.Path)
				h.Site.Warn("mcp: " + s.Path + ": " + n)
			}
		}
		if err := scope.Add(checks.Add("mcp", func(context.Context) []doctor.Finding {
			return append(append([]doctor.Finding(nil), read...), m.Findings()...)
		})); err != nil {
			return err
		}
		if err != nil {
			h.Logger.Warn("some MCP servers are misconfigured and were skipped", "err", err)
		}
		if err := m.Start(ctx, servers); err != nil {
			h.Logger.Warn("some MCP servers could not be added", "err", err)
		}
		return core.Provide(h, scope, m)
	}
}

// SourceFindings name the other tools' files the servers were read from,
// and what in them dsh does not use.
func SourceFindings(sources []Source) []doctor.Finding {
	var out []doctor.Finding
	for _, s := range sources {
		out = append(out, doctor.Finding{Severity: doctor.OK, Subject: s.Path, Message: fmt.Sprintf("read: %s (%d MCP server(s))", s.Path, s.Servers)})
		for _, n := range s.Notes {
			out = append(out, doctor.Finding{Severity: doctor.Warning, Subject: s.Path, Message: n})
		}
	}
	return out
}
