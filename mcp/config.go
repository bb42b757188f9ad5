package mcp

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dshq/dsh/settings"
)

// Transport names.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
	TransportSSE   = "sse"
	// TransportSDK is a server the program that runs dsh hosts in its own
	// process (a Claude Agent SDK createSdkMcpServer), reached through
	// ServerConfig.Custom.
	TransportSDK = "sdk"
)

// Startup modes.
const (
	// StartupLazy registers the cached tool list at once and starts the
	// server on the first call (the default). Without a cache the server is
	// connected in the background at startup and its tools appear when it
	// is ready.
	StartupLazy = "lazy"
	// StartupEager connects in the background as soon as the manager
	// starts (tools from the cache are registered meanwhile).
	StartupEager = "eager"
)

// Sources name where a server was configured: the settings layers, plus
// the project's .mcp.json and an ACP client's servers.
const (
	SourceUser         = string(settings.LayerUser)         // $DSH_HOME/settings.json
	SourceProject      = string(settings.LayerProject)      // <project>/.dsh/settings.json
	SourceLocal        = string(settings.LayerLocal)        // <project>/.dsh/settings.local.json
	SourceSettingsFile = string(settings.LayerSettingsFile) // --settings FILE
	SourceCLI          = string(settings.LayerCLI)          // a command-line flag (--mcp-config)
	SourceMCPJSON      = "mcp.json"                         // <project>/.mcp.json
	SourceSession      = "session"                          // passed by an ACP client for one session
)

// Key is "mcpServers": servers by name, in Claude Code's shape, each
// decoded (and checked) by [ParseServers] when the client starts.
var Key = settings.Key[map[string]json.RawMessage]{Name: "mcpServers", Merge: settings.MergeMaps[map[string]json.RawMessage]}

// StrictKey is "strictMcpConfig": when true only the servers the run was
// given count — the command line's (--mcp-config) and, in ACP, those an
// editor sends — and no settings file, .mcp.json or other configuration is
// read for servers. It is what Claude Code's --strict-mcp-config means, and
// that flag sets it; scripts use it to pin a run's tools exactly.
var StrictKey = settings.Key[bool]{Name: "strictMcpConfig"}

// ProjectFile is the project's MCP configuration, as Claude Code writes it.
const ProjectFile = ".mcp.json"

// ServerConfig is one MCP server, in the shape Claude Code users write in
// `mcpServers`: command/args/env for a stdio server, type "http" with
// url/headers for a streamable HTTP server (type "sse" for the legacy SSE
// transport). Values may reference the environment as ${VAR} or
// ${VAR:-default}; they are expanded when the server starts.
//
// dsh adds a few optional keys: startup ("lazy", the default, or
// "eager"), timeout (per-call timeout in milliseconds), toolSearch (true
// to expose this server's tools only through mcp_tool_search/mcp_call,
// false to always list them), structuredContent (true to give the model a
// result's structured content even when its text already says the same),
// cwd and disabled.
type ServerConfig struct {
	// Name is the key in mcpServers; tools are named mcp__<name>__<tool>.
	Name string `json:"-"`

	Type    string            `json:"type,omitempty"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`

	Startup    string `json:"startup,omitempty"`
	TimeoutMs  int64  `json:"timeout,omitempty"`
	ToolSearch *bool  `json:"toolSearch,omitempty"`
	// StructuredContent, when true, adds a result's structured content
	// (as JSON) to its text content; by default it is sent only when the
	// result has no text, which usually says the same.
	StructuredContent bool `json:"structuredContent,omitempty"`
	Disabled          bool `json:"disabled,omitempty"`

	// Source says where the server was configured (Source* constants).
	Source string `json:"-"`
	// Path is the file it came from, if any.
	Path string `json:"-"`
	// Dir is the project directory for project-defined servers (.mcp.json,
	// project and local settings): they start only when Options.Trusted
	// accepts it. Empty for servers the user configured.
	Dir string `json:"-"`
	// Custom is the transport of an "sdk" server (set in code, never read
	// from JSON). Its tool list is never cached: the host process defines
	// it anew each run.
	Custom sdk.Transport `json:"-"`
}

// Transport returns the normalized transport name.
func (c ServerConfig) Transport() string {
	switch strings.ToLower(c.Type) {
	case "", TransportStdio:
		if c.Command == "" && c.URL != "" {
			return TransportHTTP
		}
		return TransportStdio
	case TransportHTTP, "streamable-http", "streamablehttp", "streamable_http":
		return TransportHTTP
	case TransportSSE:
		return TransportSSE
	case TransportSDK:
		return TransportSDK
	}
	return strings.ToLower(c.Type)
}

// Timeout returns the per-call timeout the config asks for (0: the
// manager's default).
func (c ServerConfig) Timeout() time.Duration {
	return time.Duration(c.TimeoutMs) * time.Millisecond
}

// Lazy reports whether the server starts on first use.
func (c ServerConfig) Lazy() bool { return c.Startup != StartupEager && c.Transport() != TransportSDK }

// Validate checks the config's shape.
func (c ServerConfig) Validate() error {
	if c.Name == "" {
		return errors.New("server has no name")
	}
	if toolPart(c.Name) == "" {
		return fmt.Errorf("server name %q has no letters or digits", c.Name)
	}
	if err := checkServerPart(c.Name); err != nil {
		return err
	}
	switch c.Transport() {
	case TransportStdio:
		if c.Command == "" {
			return errors.New(`stdio server needs "command" (or set "type": "http" with "url")`)
		}
	case TransportHTTP, TransportSSE:
		if c.URL == "" {
			return fmt.Errorf(`%s server needs "url"`, c.Transport())
		}
	case TransportSDK:
		if c.Custom == nil {
			return errors.New(`"sdk" servers are hosted by the program that runs dsh (the Claude Agent SDK); they cannot be configured in a file`)
		}
	default:
		return fmt.Errorf("unknown type %q (want stdio, http or sse)", c.Type)
	}
	switch c.Startup {
	case "", StartupLazy, StartupEager:
	default:
		return fmt.Errorf(`unknown startup %q (want "lazy" or "eager")`, c.Startup)
	}
	if c.TimeoutMs < 0 {
		return errors.New("timeout must not be negative")
	}
	return nil
}

// checkServerPart refuses server names that would make tool names
// ambiguous. A tool is named mcp__<server>__<tool>, so the server part must
// end where the first "__" starts: with "__" inside it, or a trailing "_",
// server "github__evil" (or "github_") could name a tool exactly as server
// "github" does, and permission rules for "github" (mcp__github, which
// covers mcp__github__*) would apply to it.
func checkServerPart(name string) error {
	p := toolPart(name)
	if !strings.Contains(p, "__") && !strings.HasSuffix(p, "_") {
		return nil
	}
	return fmt.Errorf(`server name %q is not allowed: its tools would be named mcp__%s__<tool>, and a server name with "__" or ending in "_" `+
		`makes tool names ambiguous (permission rules for another server, such as mcp__%s, would match them); `+
		`characters other than letters, digits, "_" and "-" count as "_"; use a single "_" or "-" instead`,
		name, p, firstPart(p))
}

// firstPart is the server part another server would claim: what precedes
// the first "__", or p without its trailing underscores.
func firstPart(p string) string {
	if i := strings.Index(p, "__"); i > 0 {
		return p[:i]
	}
	return strings.TrimRight(p, "_")
}

// fingerprint identifies what the server runs, so a cached tool list is
// used only for the same command or endpoint. Secrets (env, headers) are
// left out: they do not change which tools a server has.
func (c ServerConfig) fingerprint() string {
	b, _ := json.Marshal([]any{c.Transport(), c.Command, c.Args, c.Cwd, c.URL})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// sameServer reports whether two configs run the same server (ACP sessions
// may share a server configured identically).
func sameServer(a, b ServerConfig) bool {
	a.Source, a.Path, a.Dir = "", "", ""
	b.Source, b.Path, b.Dir = "", "", ""
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return a.Name == b.Name && bytes.Equal(ja, jb)
}

// ParseServers decodes an mcpServers object. source and path say where it
// came from; dir is the project directory for project-defined servers ("" for
// the user's). Servers with problems are left out and reported in the
// joined error; the others are returned, sorted by name.
func ParseServers(raw map[string]json.RawMessage, source, path, dir string) ([]ServerConfig, error) {
	names := make([]string, 0, len(raw))
	for n := range raw {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []ServerConfig
	var errs []error
	for _, name := range names {
		c, err := parseServer(name, raw[name])
		if err != nil {
			where := path
			if where == "" {
				where = source
			}
			errs = append(errs, fmt.Errorf("mcp: %s: mcpServers.%s: %w", where, name, err))
			continue
		}
		c.Source, c.Path, c.Dir = source, path, dir
		out = append(out, c)
	}
	return out, errors.Join(errs...)
}

func parseServer(name string, raw json.RawMessage) (ServerConfig, error) {
	var c ServerConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return c, fmt.Errorf("%s: expected %s, got %s", te.Field, te.Type, te.Value)
		}
		return c, err
	}
	c.Name = name
	return c, c.Validate()
}

// LoadProjectFile reads dir/.mcp.json. A missing file is no error.
func LoadProjectFile(dir string) ([]ServerConfig, error) {
	path := filepath.Join(dir, ProjectFile)
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, iofs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("mcp: %w", err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	var doc struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("mcp: %s: not valid JSON: %v", path, err)
	}
	return ParseServers(doc.MCPServers, SourceMCPJSON, path, dir)
}

// Configured collects the servers of the settings layers in force, of
// cwd/.mcp.json and of the user's Claude Code and Codex files (homes),
// with extra (plugin bundles' servers) lowest of all.
// Later sources win by name: extra < Codex's config.toml < ~/.claude.json's
// mcpServers < $DSH_HOME settings < .mcp.json < ~/.claude.json's entry for
// this project < project < local < --settings < the command line (Claude
// Code's order: user < project < local). Servers from the project
// (.mcp.json, project and local settings) carry Dir = cwd, so they start
// only in a trusted project. Problems are joined into the error; the
// valid servers are returned all the same.
func Configured(c *settings.Config, cwd string, homes Homes, extra ...ServerConfig) ([]ServerConfig, error) {
	out, _, err := ConfiguredFrom(c, cwd, homes, extra...)
	return out, err
}

// Source is another tool's configuration file [ConfiguredFrom] read: how
// many servers it gave and what in it dsh does not use.
type Source struct {
	Path    string
	Servers int
	Notes   []string
}

// ConfiguredFrom is [Configured] that also says which of the user's other
// tools' files (~/.claude.json, Codex's config.toml) it read, for dsh
// doctor and stderr: the first place a switching user looks.
func ConfiguredFrom(c *settings.Config, cwd string, homes Homes, extra ...ServerConfig) ([]ServerConfig, []Source, error) {
	var sources []Source
	byName := map[string]ServerConfig{}
	var errs []error
	add := func(cs []ServerConfig, err error) {
		if err != nil {
			errs = append(errs, err)
		}
		for _, c := range cs {
			byName[c.Name] = c
		}
	}
	layers := Key.Layers(c)
	layer := func(l settings.Layer) {
		for _, v := range layers {
			if v.Layer != l || len(v.Value) == 0 {
				continue
			}
			dir := ""
			if l.Project() {
				dir = cwd
			}
			add(ParseServers(v.Value, string(l), v.Path, dir))
		}
	}
	if !StrictKey.Get(c) {
		add(extra, nil)
		var notes []string
		codex, err := codexConfig(homes.codex(), &notes)
		add(codex, err)
		if p := filepath.Join(homes.codex(), "config.toml"); homes.codex() != "" && exists(p) {
			sources = append(sources, Source{Path: p, Servers: len(codex), Notes: notes})
		}
		var claudeNotes []string
		claudeUser, claudeProject, err := claudeJSON(homes.User, cwd, &claudeNotes)
		add(claudeUser, err)
		if p := filepath.Join(homes.User, ".claude.json"); homes.User != "" && exists(p) {
			sources = append(sources, Source{Path: p, Servers: len(claudeUser) + len(claudeProject), Notes: claudeNotes})
		}
		layer(settings.LayerUser)
		if cwd != "" {
			add(LoadProjectFile(cwd))
		}
		add(claudeProject, nil)
		layer(settings.LayerProject)
		layer(settings.LayerLocal)
		layer(settings.LayerSettingsFile)
	}
	layer(settings.LayerCLI)
	out := make([]ServerConfig, 0, len(byName))
	for _, c := range byName {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b ServerConfig) int { return strings.Compare(a.Name, b.Name) })
	return out, sources, errors.Join(errs...)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// expand replaces ${VAR} and ${VAR:-default} using lookup. A variable that
// is unset and has no default is an error.
func expand(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		expr := s[i+2 : i+j]
		name, def, hasDef := strings.Cut(expr, ":-")
		v, ok := lookup(name)
		switch {
		case ok && v != "":
			b.WriteString(v)
		case hasDef:
			b.WriteString(def)
		case ok:
		default:
			return "", fmt.Errorf("environment variable %s is not set (write ${%s:-default} for a default)", name, name)
		}
		s = s[i+j+1:]
	}
}

// expanded returns c with every ${...} reference replaced.
func (c ServerConfig) expanded(lookup func(string) (string, bool)) (ServerConfig, error) {
	var firstErr error
	x := func(s string) string {
		v, err := expand(s, lookup)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		return v
	}
	out := c
	out.Command, out.URL, out.Cwd = x(c.Command), x(c.URL), x(c.Cwd)
	out.Args = nil
	for _, a := range c.Args {
		out.Args = append(out.Args, x(a))
	}
	if c.Env != nil {
		out.Env = map[string]string{}
		for k, v := range c.Env {
			out.Env[k] = x(v)
		}
	}
	if c.Headers != nil {
		out.Headers = map[string]string{}
		for k, v := range c.Headers {
			out.Headers[k] = x(v)
		}
	}
	return out, firstErr
}
