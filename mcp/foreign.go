package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// Sources of the servers other tools' files configure.
const (
	// SourceClaudeUser is the top-level mcpServers of ~/.claude.json
	// (Claude Code's user scope).
	SourceClaudeUser = "claude.json"
	// SourceClaudeProject is ~/.claude.json's projects[<dir>].mcpServers
	// (Claude Code's local scope: the user's own, for one project).
	SourceClaudeProject = "claude.json project"
	// SourceCodex is [mcp_servers.*] of Codex's config.toml.
	SourceCodex = "codex config.toml"
)

// Homes says where the user's other tools keep their configuration.
type Homes struct {
	// User is the user's home directory (~/.claude.json).
	User string
	// Codex is $CODEX_HOME (default User/.codex).
	Codex string
}

func (h Homes) codex() string {
	if h.Codex != "" {
		return h.Codex
	}
	if h.User != "" {
		return filepath.Join(h.User, ".codex")
	}
	return ""
}

// claudeJSON reads ~/.claude.json: its user-scope servers and those it
// keeps for the project cwd. Both are the user's own configuration (the
// file is in their home), so they need no project trust.
func claudeJSON(home, cwd string, notes *[]string) (user, project []ServerConfig, err error) {
	if home == "" {
		return nil, nil, nil
	}
	path := filepath.Join(home, ".claude.json")
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, iofs.ErrNotExist) {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("mcp: %w", err)
	}
	var doc struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
		Projects   map[string]struct {
			MCPServers map[string]json.RawMessage `json:"mcpServers"`
		} `json:"projects"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, nil, fmt.Errorf("mcp: %s: %w", path, err)
	}
	if notes != nil {
		*notes = append(*notes, unusedServerKeys("mcpServers", doc.MCPServers)...)
		for dir, p := range doc.Projects {
			if cwd != "" && filepath.Clean(dir) == filepath.Clean(cwd) {
				*notes = append(*notes, unusedServerKeys("projects["+dir+"].mcpServers", p.MCPServers)...)
			}
		}
	}
	var errs []error
	user, err = ParseServers(doc.MCPServers, SourceClaudeUser, path, "")
	errs = append(errs, err)
	if cwd != "" {
		for dir, p := range doc.Projects {
			if filepath.Clean(dir) == filepath.Clean(cwd) {
				project, err = ParseServers(p.MCPServers, SourceClaudeProject, path, "")
				errs = append(errs, err)
			}
		}
	}
	return user, project, errors.Join(errs...)
}

// codexServer is one [mcp_servers.<name>] table of Codex's config.toml.
type codexServer struct {
	Command           string            `toml:"command"`
	Args              []string          `toml:"args"`
	Env               map[string]string `toml:"env"`
	Cwd               string            `toml:"cwd"`
	URL               string            `toml:"url"`
	BearerTokenEnvVar string            `toml:"bearer_token_env_var"`
	HTTPHeaders       map[string]string `toml:"http_headers"`
	EnvHTTPHeaders    map[string]string `toml:"env_http_headers"`
	ToolTimeoutSec    float64           `toml:"tool_timeout_sec"`
	Enabled           *bool             `toml:"enabled"`
}

// codexConfig reads the [mcp_servers.*] tables of config.toml in the Codex
// home, in dsh's shape: a bearer_token_env_var becomes an Authorization
// header reading that variable, env_http_headers headers reading theirs,
// tool_timeout_sec the per-call timeout and enabled = false disabled.
func codexConfig(codexHome string, notes *[]string) ([]ServerConfig, error) {
	if codexHome == "" {
		return nil, nil
	}
	path := filepath.Join(codexHome, "config.toml")
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, iofs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("mcp: %w", err)
	}
	var doc struct {
		MCPServers map[string]codexServer `toml:"mcp_servers"`
	}
	md, err := toml.Decode(string(b), &doc)
	if err != nil {
		return nil, fmt.Errorf("mcp: %s: %w", path, err)
	}
	if notes != nil {
		// Keys of a server's table dsh does not read are named, not
		// dropped in silence (the rest of config.toml is not about MCP).
		for _, k := range md.Undecoded() {
			if len(k) >= 3 && k[0] == "mcp_servers" {
				*notes = append(*notes, fmt.Sprintf("mcp_servers.%s.%s: not supported by dsh; ignored", k[1], strings.Join(k[2:], ".")))
			}
		}
	}
	names := make([]string, 0, len(doc.MCPServers))
	for n := range doc.MCPServers {
		names = append(names, n)
	}
	sort.Strings(names)
	raw := map[string]json.RawMessage{}
	for _, n := range names {
		s := doc.MCPServers[n]
		c := ServerConfig{Command: s.Command, Args: s.Args, Env: s.Env, Cwd: s.Cwd, URL: s.URL, TimeoutMs: int64(s.ToolTimeoutSec * 1000),
			Disabled: s.Enabled != nil && !*s.Enabled}
		if s.URL != "" {
			c.Type = TransportHTTP
			c.Headers = map[string]string{}
			for k, v := range s.HTTPHeaders {
				c.Headers[k] = v
			}
			for k, v := range s.EnvHTTPHeaders {
				c.Headers[k] = "${" + v + "}"
			}
			if s.BearerTokenEnvVar != "" {
				c.Headers["Authorization"] = "Bearer ${" + s.BearerTokenEnvVar + "}"
			}
		}
		j, err := json.Marshal(c)
		if err != nil {
			return nil, fmt.Errorf("mcp: %s: %s: %w", path, n, err)
		}
		raw[n] = j
	}
	return ParseServers(raw, SourceCodex, path, "")
}

// serverKeys are the keys of an mcpServers entry dsh reads.
var serverKeys = map[string]bool{"type": true, "command": true, "args": true, "env": true, "cwd": true, "url": true, "headers": true,
	"startup": true, "timeout": true, "toolSearch": true, "structuredContent": true, "disabled": true}

// unusedServerKeys name the keys of Claude Code's server entries dsh does
// not read (oauth, headersHelper, …): the server is still configured from
// the rest, and the user is told what was left out.
func unusedServerKeys(where string, servers map[string]json.RawMessage) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		var doc map[string]json.RawMessage
		if json.Unmarshal(servers[name], &doc) != nil {
			continue // ParseServers reports it
		}
		for _, k := range slices.Sorted(maps.Keys(doc)) {
			if !serverKeys[k] {
				out = append(out, fmt.Sprintf("%s.%s.%s: not supported by dsh; ignored", where, name, k))
			}
		}
	}
	return out
}
