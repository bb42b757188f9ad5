// Package bundles is Claude Code's plugins: directories with a
// .claude-plugin/plugin.json manifest (optional) and the standard layout —
// commands/, agents/, skills/<name>/SKILL.md, hooks/hooks.json and
// .mcp.json — switched on in Claude Code's settings files ("enabledPlugins"
// with "name@marketplace" ids, marketplaces from "extraKnownMarketplaces"
// and the ones Claude Code itself recorded under ~/.claude/plugins).
//
// They are called bundles here because "plugin" is already dsh's word for
// its own capabilities.
//
// dsh never downloads: a plugin counts when its directory is on this
// machine — a directory marketplace, a marketplace or plugin Claude Code
// already cloned or installed, or a checkout the user points at. A plugin
// whose marketplace is only a GitHub or URL source is reported (stderr,
// dsh doctor) with what to do, not silently dropped.
//
// Trust follows who switched the plugin on: one enabled in the user's own
// ~/.claude/settings.json is the user's choice and runs anywhere; one
// enabled (or a marketplace declared) only by a project's
// .claude/settings.json or .claude/settings.local.json counts once the
// project is trusted, like the project's own hooks.
package bundles

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/dshq/dsh/doctor"
)

const trustFix = "trust the project (run dsh here interactively, or pass --trust)"

// RootVariable is the variable a plugin's hooks and MCP servers use to
// name the plugin's own directory.
const RootVariable = "CLAUDE_PLUGIN_ROOT"

// Bundle is one enabled plugin whose directory was found.
type Bundle struct {
	// ID is how settings name it: "name@marketplace", or the directory
	// for one given by path.
	ID string
	// Name is the manifest's name (else the directory's): the namespace
	// of its commands, skills and agents ("name:command").
	Name        string
	Version     string
	Description string
	// Root is the plugin's directory.
	Root string
	// EnabledBy is the settings file that switched it on.
	EnabledBy string
	// Project is set when only a project's files enabled it: it counts
	// once the project is trusted.
	Project bool

	m manifest
}

// Locations says where the settings files that enable plugins are.
type Locations struct {
	// UserHome is the user's home (~/.claude/settings.json,
	// ~/.claude/plugins).
	UserHome string
	// Project is the working directory (its .claude/settings.json and
	// .claude/settings.local.json); "" reads the user's file only.
	Project string
	// Dirs are plugin directories given by path (dsh's --plugin-dir, as
	// Claude Code's): enabled for this run, the user's own choice.
	Dirs []string
}

// Found is what [Find] found: the enabled plugins with directories, in a
// stable order (by name), and what it could not use.
type Found struct {
	Bundles []Bundle
	// Findings are for dsh doctor and stderr: plugins skipped (untrusted
	// project, marketplace not on this machine, malformed manifest) and
	// parts of a plugin dsh does not run.
	Findings []doctor.Finding
}

// settingsFile is the part of a Claude Code settings file about plugins.
type settingsFile struct {
	EnabledPlugins         map[string]json.RawMessage `json:"enabledPlugins"`
	ExtraKnownMarketplaces map[string]struct {
		Source marketSource `json:"source"`
	} `json:"extraKnownMarketplaces"`
}

// marketSource is where a marketplace is: Claude Code's "directory" and
// "file" are on this machine; "github", "git", "url" and the rest need a
// download dsh does not make.
type marketSource struct {
	Source string `json:"source"`
	Path   string `json:"path"`
	Repo   string `json:"repo"`
	URL    string `json:"url"`
}

func (s marketSource) where() string {
	for _, v := range []string{s.Repo, s.URL, s.Path} {
		if v != "" {
			return s.Source + " " + v
		}
	}
	return s.Source
}

type enable struct {
	on      bool
	file    string
	project bool
}

type market struct {
	src     marketSource
	file    string // the settings file declaring it
	base    string // relative paths are against this directory
	project bool
}

// Find reads which plugins are enabled and finds their directories.
// trusted says whether the project's files count.
func Find(loc Locations, trusted bool) Found {
	var f Found
	enabled := map[string]enable{}
	markets := map[string]market{}
	type layer struct {
		path, base string
		project    bool
	}
	var layers []layer
	if loc.UserHome != "" {
		layers = append(layers, layer{filepath.Join(loc.UserHome, ".claude", "settings.json"), loc.UserHome, false})
	}
	if loc.Project != "" {
		layers = append(layers,
			layer{filepath.Join(loc.Project, ".claude", "settings.json"), loc.Project, true},
			layer{filepath.Join(loc.Project, ".claude", "settings.local.json"), loc.Project, true})
	}
	for _, l := range layers {
		b, err := os.ReadFile(l.path)
		if err != nil {
			if !errors.Is(err, iofs.ErrNotExist) {
				f.warn(l.path, "cannot read it: "+err.Error(), "")
			}
			continue
		}
		var doc settingsFile
		if err := json.Unmarshal(b, &doc); err != nil {
			// The settings pipeline reports a file that is not JSON; here
			// it only means no plugin is read from it.
			continue
		}
		if len(doc.EnabledPlugins) == 0 && len(doc.ExtraKnownMarketplaces) == 0 {
			continue
		}
		if l.project && !trusted {
			f.Findings = append(f.Findings, doctor.Finding{Severity: doctor.Warning, Subject: l.path,
				Message: "skipped: its enabledPlugins and extraKnownMarketplaces count once the project is trusted",
				Fix:     trustFix})
			continue
		}
		for _, id := range sortedKeys(doc.EnabledPlugins) {
			var on bool
			if err := json.Unmarshal(doc.EnabledPlugins[id], &on); err != nil {
				f.warn(l.path, fmt.Sprintf("enabledPlugins[%q] is not true or false; ignored", id), "")
				continue
			}
			enabled[id] = enable{on: on, file: l.path, project: l.project}
		}
		for _, name := range sortedKeys(doc.ExtraKnownMarketplaces) {
			markets[name] = market{src: doc.ExtraKnownMarketplaces[name].Source, file: l.path, base: l.base, project: l.project}
		}
	}
	installed, known := claudeRecords(loc.UserHome, &f)
	seen := map[string]string{} // name → root, to report a second plugin of a name
	add := func(b Bundle) {
		if prev, ok := seen[b.Name]; ok {
			f.warn(b.Root, fmt.Sprintf("skipped: a plugin named %q is already enabled from %s", b.Name, prev), "")
			return
		}
		seen[b.Name] = b.Root
		f.Bundles = append(f.Bundles, b)
	}
	for _, dir := range loc.Dirs {
		root, err := filepath.Abs(dir)
		if err != nil {
			root = dir
		}
		b, err := open(root, "")
		if err != nil {
			f.warn(root, "skipped: "+err.Error(), "")
			continue
		}
		b.ID, b.EnabledBy = root, "--plugin-dir"
		add(b)
	}
	for _, id := range sortedKeys(enabled) {
		e := enabled[id]
		if !e.on {
			continue
		}
		name, mkt, ok := strings.Cut(id, "@")
		if !ok || name == "" || mkt == "" {
			f.warn(e.file, fmt.Sprintf("enabledPlugins: %q is not a plugin id (name@marketplace); ignored", id), "")
			continue
		}
		root, project, why := resolve(name, mkt, markets, installed, known)
		if root == "" {
			f.warn(e.file, fmt.Sprintf("skipped: plugin %s: %s", id, why),
				"dsh does not download plugins: clone the marketplace and declare it in extraKnownMarketplaces as {\"source\": {\"source\": \"directory\", \"path\": …}}, or pass --plugin-dir")
			continue
		}
		b, err := open(root, name)
		if err != nil {
			f.warn(root, fmt.Sprintf("skipped: plugin %s: %v", id, err), "")
			continue
		}
		b.ID, b.EnabledBy, b.Project = id, e.file, e.project || project
		add(b)
	}
	sort.SliceStable(f.Bundles, func(i, j int) bool { return f.Bundles[i].Name < f.Bundles[j].Name })
	for _, b := range f.Bundles {
		f.Findings = append(f.Findings, b.notes()...)
	}
	return f
}

func (f *Found) warn(subject, msg, fix string) {
	f.Findings = append(f.Findings, doctor.Finding{Severity: doctor.Warning, Subject: subject, Message: msg, Fix: fix})
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// claudeRecords reads what Claude Code recorded under ~/.claude/plugins:
// installed_plugins.json (each installed plugin's copy) and
// known_marketplaces.json (each added marketplace's clone), so plugins a
// Claude Code user already installed work unchanged.
func claudeRecords(home string, f *Found) (installed map[string]string, known map[string]string) {
	installed, known = map[string]string{}, map[string]string{}
	if home == "" {
		return
	}
	dir := filepath.Join(home, ".claude", "plugins")
	if b, err := os.ReadFile(filepath.Join(dir, "installed_plugins.json")); err == nil {
		var doc struct {
			Plugins map[string]json.RawMessage `json:"plugins"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			f.warn(filepath.Join(dir, "installed_plugins.json"), "not valid JSON; Claude Code's installed plugins are not used: "+err.Error(), "")
		}
		for id, raw := range doc.Plugins {
			// Version 2 keeps a list of installs (one per scope); version 1
			// one object.
			var list []struct {
				InstallPath string `json:"installPath"`
			}
			if json.Unmarshal(raw, &list) != nil {
				var one struct {
					InstallPath string `json:"installPath"`
				}
				if json.Unmarshal(raw, &one) == nil {
					list = append(list, one)
				}
			}
			for _, e := range list {
				if e.InstallPath != "" {
					installed[id] = e.InstallPath
					break
				}
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "known_marketplaces.json")); err == nil {
		var doc map[string]struct {
			InstallLocation string `json:"installLocation"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			f.warn(filepath.Join(dir, "known_marketplaces.json"), "not valid JSON; Claude Code's marketplaces are not used: "+err.Error(), "")
		}
		for name, m := range doc {
			if m.InstallLocation != "" {
				known[name] = m.InstallLocation
			}
		}
	}
	return installed, known
}

// resolve finds the directory of plugin name in marketplace mkt: a
// marketplace declared in settings with a directory or file source, else
// Claude Code's installed copy of the plugin, else its clone of the
// marketplace. project is set when the directory came from a project's
// declaration. why says what is missing when root is "".
func resolve(name, mkt string, markets map[string]market, installed, known map[string]string) (root string, project bool, why string) {
	id := name + "@" + mkt
	if m, ok := markets[mkt]; ok {
		switch m.src.Source {
		case "directory", "file":
			p := expandHome(m.src.Path)
			if p == "" {
				return "", false, fmt.Sprintf("marketplace %s (%s) names no path", mkt, m.file)
			}
			if !filepath.IsAbs(p) {
				p = filepath.Join(m.base, p)
			}
			file := filepath.Join(p, ".claude-plugin", "marketplace.json")
			if m.src.Source == "file" {
				file = p
				p = filepath.Dir(filepath.Dir(p))
				if filepath.Base(filepath.Dir(file)) != ".claude-plugin" {
					p = filepath.Dir(file)
				}
			}
			r, err := inMarketplace(file, p, name)
			if err != nil {
				return "", false, fmt.Sprintf("marketplace %s: %v", mkt, err)
			}
			return r, m.project, ""
		default:
			if p, ok := installed[id]; ok && isDir(p) {
				return p, false, ""
			}
			if p, ok := known[mkt]; ok && isDir(p) {
				if r, err := inMarketplace(filepath.Join(p, ".claude-plugin", "marketplace.json"), p, name); err == nil {
					return r, false, ""
				}
			}
			return "", false, fmt.Sprintf("marketplace %s is a %s source (%s), which is not on this machine", mkt, m.src.where(), m.file)
		}
	}
	if p, ok := installed[id]; ok && isDir(p) {
		return p, false, ""
	}
	if p, ok := known[mkt]; ok && isDir(p) {
		r, err := inMarketplace(filepath.Join(p, ".claude-plugin", "marketplace.json"), p, name)
		if err != nil {
			return "", false, fmt.Sprintf("marketplace %s: %v", mkt, err)
		}
		return r, false, ""
	}
	return "", false, fmt.Sprintf("marketplace %s is not declared in extraKnownMarketplaces nor known to Claude Code on this machine", mkt)
}

func expandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, rest)
		}
	}
	return p
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// marketplaceFile is .claude-plugin/marketplace.json.
type marketplaceFile struct {
	Name     string `json:"name"`
	Metadata struct {
		PluginRoot string `json:"pluginRoot"`
	} `json:"metadata"`
	Plugins []struct {
		Name   string          `json:"name"`
		Source json.RawMessage `json:"source"`
	} `json:"plugins"`
}

// inMarketplace is the directory of plugin name listed in the marketplace
// file (root is the marketplace's directory).
func inMarketplace(file, root, name string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	var doc marketplaceFile
	if err := json.Unmarshal(b, &doc); err != nil {
		return "", fmt.Errorf("%s is not valid JSON: %v", file, err)
	}
	for _, p := range doc.Plugins {
		if p.Name != name {
			continue
		}
		var rel string
		if err := json.Unmarshal(p.Source, &rel); err != nil {
			var obj marketSource
			_ = json.Unmarshal(p.Source, &obj)
			return "", fmt.Errorf("%s lists %s with a %s source, which dsh does not download", file, name, obj.where())
		}
		if !strings.HasPrefix(rel, "./") && !strings.HasPrefix(rel, "../") && doc.Metadata.PluginRoot != "" {
			rel = filepath.Join(doc.Metadata.PluginRoot, rel)
		}
		dir := filepath.Clean(filepath.Join(root, rel))
		if !within(root, dir) {
			return "", fmt.Errorf("%s: the source of %s (%s) is outside the marketplace", file, name, rel)
		}
		if !isDir(dir) {
			return "", fmt.Errorf("%s: the directory of %s (%s) does not exist", file, name, dir)
		}
		return dir, nil
	}
	return "", fmt.Errorf("%s does not list a plugin named %s", file, name)
}

func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// manifest is .claude-plugin/plugin.json. Component paths are strings or
// lists of strings relative to the plugin's root; hooks and mcpServers may
// also be inline objects.
type manifest struct {
	Name        string          `json:"name"`
	Version     string          `json:"version"`
	Description string          `json:"description"`
	Commands    json.RawMessage `json:"commands"`
	Agents      json.RawMessage `json:"agents"`
	Skills      json.RawMessage `json:"skills"`
	Hooks       json.RawMessage `json:"hooks"`
	MCPServers  json.RawMessage `json:"mcpServers"`

	unknown []string
	path    string
}

// metadataKeys are manifest keys that describe the plugin and do nothing
// at run time.
var metadataKeys = map[string]bool{"$schema": true, "name": true, "version": true, "description": true, "author": true, "homepage": true,
	"repository": true, "license": true, "keywords": true, "category": true, "tags": true}

var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`) })

// open reads the plugin at root; want is the name its marketplace lists
// ("" when given by path).
func open(root, want string) (Bundle, error) {
	if !isDir(root) {
		return Bundle{}, fmt.Errorf("%s is not a directory", root)
	}
	b := Bundle{Root: root, Name: want}
	if b.Name == "" {
		b.Name = filepath.Base(root)
	}
	path := filepath.Join(root, ".claude-plugin", "plugin.json")
	raw, err := os.ReadFile(path)
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		// The manifest is optional: the standard layout is read.
	case err != nil:
		return Bundle{}, err
	default:
		if err := json.Unmarshal(raw, &b.m); err != nil {
			return Bundle{}, fmt.Errorf("%s is not valid JSON: %v", path, err)
		}
		var all map[string]json.RawMessage
		_ = json.Unmarshal(raw, &all)
		for _, k := range sortedKeys(all) {
			switch {
			case metadataKeys[k]:
			case slices.Contains([]string{"commands", "agents", "skills", "hooks", "mcpServers"}, k):
			default:
				b.m.unknown = append(b.m.unknown, k)
			}
		}
		b.m.path = path
		if b.m.Name != "" {
			b.Name = b.m.Name
		}
		b.Version, b.Description = b.m.Version, b.m.Description
	}
	if !nameRE().MatchString(b.Name) {
		return Bundle{}, fmt.Errorf("plugin name %q is not one dsh can namespace commands with (letters, digits, '.', '_', '-')", b.Name)
	}
	return b, nil
}

// notes are the parts of a plugin dsh does not run.
func (b Bundle) notes() []doctor.Finding {
	var out []doctor.Finding
	for _, k := range b.m.unknown {
		out = append(out, doctor.Finding{Severity: doctor.Warning, Subject: b.m.path,
			Message: fmt.Sprintf("plugin %s: %q is not supported by dsh; that part of the plugin is not used", b.Name, k)})
	}
	for _, p := range b.problems() {
		out = append(out, doctor.Finding{Severity: doctor.Warning, Subject: b.Root, Message: "plugin " + b.Name + ": " + p})
	}
	return out
}

// paths reads a component field: a path or a list of paths, each inside
// the plugin.
func (b Bundle) paths(raw json.RawMessage, field string) (out []string, problems []string) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []string
	var one string
	if json.Unmarshal(raw, &one) == nil {
		list = []string{one}
	} else if json.Unmarshal(raw, &list) != nil {
		return nil, []string{fmt.Sprintf("%q is not a path or a list of paths; ignored", field)}
	}
	for _, p := range list {
		abs := filepath.Clean(filepath.Join(b.Root, p))
		if !within(b.Root, abs) {
			problems = append(problems, fmt.Sprintf("%s path %q is outside the plugin; ignored", field, p))
			continue
		}
		out = append(out, abs)
	}
	return out, problems
}

// dirs are a component's directories: the standard one, then the
// manifest's (which add to it, as in Claude Code). Files named in the
// manifest are not directories and are reported by problems.
func (b Bundle) dirs(std string, raw json.RawMessage, field string) []string {
	out := []string{filepath.Join(b.Root, std)}
	ps, _ := b.paths(raw, field)
	for _, p := range ps {
		if isDir(p) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

func (b Bundle) problems() []string {
	var out []string
	for _, c := range []struct {
		field string
		raw   json.RawMessage
	}{{"commands", b.m.Commands}, {"agents", b.m.Agents}, {"skills", b.m.Skills}} {
		ps, probs := b.paths(c.raw, c.field)
		out = append(out, probs...)
		for _, p := range ps {
			if !isDir(p) {
				out = append(out, fmt.Sprintf("%s path %s is not a directory; dsh reads %s from directories only, so it is not used", c.field, p, c.field))
			}
		}
	}
	if _, errs := b.Hooks(); len(errs) > 0 {
		out = append(out, errs...)
	}
	if _, errs := b.MCPServers(); len(errs) > 0 {
		out = append(out, errs...)
	}
	return out
}

// CommandDirs are the plugin's command directories.
func (b Bundle) CommandDirs() []string { return b.dirs("commands", b.m.Commands, "commands") }

// SkillDirs are the plugin's skill directories.
func (b Bundle) SkillDirs() []string { return b.dirs("skills", b.m.Skills, "skills") }

// AgentDirs are the plugin's agent directories.
func (b Bundle) AgentDirs() []string { return b.dirs("agents", b.m.Agents, "agents") }

// Env is the environment of the plugin's hooks and MCP servers.
func (b Bundle) Env() map[string]string { return map[string]string{RootVariable: b.Root} }

// HookFile is one document of hooks in Claude Code's settings format.
type HookFile struct {
	// Source names it (a file, or the manifest for inline hooks).
	Source string
	JSON   []byte
}

// Hooks are the plugin's hook documents: hooks/hooks.json and what the
// manifest's "hooks" adds (paths or an inline object). The hooks run with
// CLAUDE_PLUGIN_ROOT in their environment, so "${CLAUDE_PLUGIN_ROOT}" in
// a command is expanded by the shell, quoting and all.
func (b Bundle) Hooks() ([]HookFile, []string) {
	var out []HookFile
	var problems []string
	read := func(p string, missingOK bool) {
		raw, err := os.ReadFile(p)
		if err != nil {
			if !(missingOK && errors.Is(err, iofs.ErrNotExist)) {
				problems = append(problems, "hooks: "+err.Error())
			}
			return
		}
		if !json.Valid(raw) {
			problems = append(problems, fmt.Sprintf("hooks: %s is not valid JSON; its hooks do not run", p))
			return
		}
		out = append(out, HookFile{Source: p, JSON: raw})
	}
	std := filepath.Join(b.Root, "hooks", "hooks.json")
	read(std, true)
	raw := bytes.TrimSpace(b.m.Hooks)
	if len(raw) > 0 && raw[0] == '{' {
		out = append(out, HookFile{Source: b.m.path, JSON: raw})
	} else {
		ps, probs := b.paths(raw, "hooks")
		problems = append(problems, probs...)
		for _, p := range ps {
			if p != std {
				read(p, false)
			}
		}
	}
	return out, problems
}

// MCPServers is the plugin's "mcpServers" object: .mcp.json's and what the
// manifest adds (a path or an inline object; later wins by name), with
// ${CLAUDE_PLUGIN_ROOT} replaced by the plugin's directory.
func (b Bundle) MCPServers() (map[string]json.RawMessage, []string) {
	out := map[string]json.RawMessage{}
	var problems []string
	merge := func(source string, raw []byte) {
		raw = bytes.ReplaceAll(raw, []byte("${"+RootVariable+"}"), jsonInner(b.Root))
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(raw, &doc); err != nil {
			problems = append(problems, fmt.Sprintf("mcpServers: %s is not a JSON object; its servers do not start", source))
			return
		}
		servers := doc
		if inner, ok := doc["mcpServers"]; ok {
			servers = nil
			if err := json.Unmarshal(inner, &servers); err != nil {
				problems = append(problems, fmt.Sprintf("mcpServers: %s: \"mcpServers\" is not an object; its servers do not start", source))
				return
			}
		}
		for k, v := range servers {
			out[k] = v
		}
	}
	read := func(p string, missingOK bool) {
		raw, err := os.ReadFile(p)
		if err != nil {
			if !(missingOK && errors.Is(err, iofs.ErrNotExist)) {
				problems = append(problems, "mcpServers: "+err.Error())
			}
			return
		}
		merge(p, raw)
	}
	std := filepath.Join(b.Root, ".mcp.json")
	read(std, true)
	raw := bytes.TrimSpace(b.m.MCPServers)
	if len(raw) > 0 && raw[0] == '{' {
		merge(b.m.path, raw)
	} else {
		ps, probs := b.paths(raw, "mcpServers")
		problems = append(problems, probs...)
		for _, p := range ps {
			if p != std {
				read(p, false)
			}
		}
	}
	return out, problems
}

// jsonInner is s as the inside of a JSON string.
func jsonInner(s string) []byte {
	b, _ := json.Marshal(s)
	return b[1 : len(b)-1]
}

// parts say what the plugin contributes, for dsh doctor.
func (b Bundle) parts() []string {
	var out []string
	count := func(dirs []string, what string, isItem func(os.DirEntry) bool) {
		n := 0
		for _, d := range dirs {
			es, _ := os.ReadDir(d)
			for _, e := range es {
				if isItem(e) {
					n++
				}
			}
		}
		if n > 0 {
			out = append(out, fmt.Sprintf("%d %s", n, what))
		}
	}
	md := func(e os.DirEntry) bool { return !e.IsDir() && strings.HasSuffix(e.Name(), ".md") }
	count(b.CommandDirs(), "command file(s)", func(e os.DirEntry) bool { return md(e) || e.IsDir() })
	count(b.SkillDirs(), "skill(s)", func(e os.DirEntry) bool { return e.IsDir() })
	count(b.AgentDirs(), "agent(s)", md)
	if hs, _ := b.Hooks(); len(hs) > 0 {
		out = append(out, fmt.Sprintf("hooks from %d file(s)", len(hs)))
	}
	if ms, _ := b.MCPServers(); len(ms) > 0 {
		out = append(out, fmt.Sprintf("MCP server(s) %s", strings.Join(sortedKeys(ms), ", ")))
	}
	return out
}
