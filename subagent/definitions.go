package subagent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Definition is a custom agent from an agents/*.md file: front matter with
// name, description, tools and model; the body is its system prompt.
type Definition struct {
	Name        string
	Description string
	// Tools restricts the child to these tools (Claude Code names such as
	// Read are mapped to dsh's); nil means every tool the parent has.
	Tools  []string
	Model  string
	Prompt string
	Path   string
	// Source is the kind of directory it came from (see [Dir]).
	Source string
	// DisallowedTools are tools the agent must not have (Claude Code's
	// disallowedTools), taken from whatever Tools allows.
	DisallowedTools []string
	// Notes name front matter keys dsh does not use, for dsh doctor and
	// the log: a switching user's file is read, not judged, but nothing
	// in it is dropped without a word.
	Notes []string
}

// unusedAgentKeys are Claude Code agent keys dsh knows and does not use,
// with what happens instead.
var unusedAgentKeys = map[string]string{
	"color":          "the terminal does not colour agents",
	"permissionMode": "a subagent runs in its parent's permission mode",
	"skills":         "a subagent sees every skill its parent sees",
	"hooks":          "a subagent runs the session's hooks",
	"mcpServers":     "a subagent uses the session's MCP servers",
	"maxTurns":       "a subagent's turn has the session's step limit",
}

// LoadDefinitions reads *.md files from dirs in order; a later directory's
// definition of the same name wins (project over user). Files without a
// name fall back to the file name. A file whose front matter cannot be
// read, or whose tools key names no tool, is left out and reported in the
// joined error (the other definitions are still returned).
func LoadDefinitions(dirs ...string) ([]Definition, error) {
	ds := make([]Dir, len(dirs))
	for i, d := range dirs {
		ds[i] = Dir{Path: d}
	}
	defs, _, err := Load(ds)
	return defs, err
}

// Dir is a directory of agent files.
type Dir struct {
	Path string
	// Source names the directory's kind for dsh doctor ("user",
	// "project", "plugin formatter").
	Source string
	// Prefix starts every agent name from this directory ("formatter:"
	// for a plugin's agents).
	Prefix string
}

// Shadow is an agent a later directory defined again: the file that lost
// and the one that won.
type Shadow struct {
	Name, Path, By string
}

// Load is [LoadDefinitions] for directories with sources and prefixes,
// and it says which files were shadowed by a later one of the same name
// (a user's agent by the project's, ~/.claude/agents by $DSH_HOME/agents),
// so dsh doctor can tell a switching user why their file is not the one
// in use.
func Load(dirs []Dir) ([]Definition, []Shadow, error) {
	byName := map[string]Definition{}
	var shadowed []Shadow
	var errs []error
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir.Path)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".md") {
				continue
			}
			path := filepath.Join(dir.Path, e.Name())
			d, err := parseDefinition(path)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			d.Name = dir.Prefix + d.Name
			d.Source = dir.Source
			if prev, ok := byName[d.Name]; ok {
				shadowed = append(shadowed, Shadow{Name: d.Name, Path: prev.Path, By: path})
			}
			byName[d.Name] = d
		}
	}
	out := make([]Definition, 0, len(byName))
	for _, d := range byName {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, shadowed, errors.Join(errs...)
}

func parseDefinition(path string) (Definition, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Definition{}, err
	}
	d := Definition{Name: strings.TrimSuffix(filepath.Base(path), ".md"), Path: path}
	// Files saved on Windows use CRLF; an editor may add a byte order mark.
	text := strings.TrimPrefix(string(b), "\ufeff")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	if first, rest, _ := strings.Cut(text, "\n"); strings.TrimRight(first, " \t") == "---" {
		lines := strings.Split(rest, "\n")
		end := -1
		for i, l := range lines {
			if strings.TrimRight(l, " \t") == "---" {
				end = i
				break
			}
		}
		if end < 0 {
			return Definition{}, fmt.Errorf("subagent: %s: front matter is not closed with ---", path)
		}
		text = strings.Join(lines[end+1:], "\n")
		if err := d.parseFront(lines[:end]); err != nil {
			return Definition{}, fmt.Errorf("subagent: %s: %w", path, err)
		}
	}
	d.Prompt = strings.TrimSpace(text)
	return d, nil
}

// parseFront reads the small YAML subset agent files use: top-level
// "key: value" lines, tools as a comma list, an inline [a, b] list or a
// block list of "- item" lines under "tools:". A tools key that names no
// tool is an error: no tool list means every tool, so reading a
// restriction as empty would silently widen the agent.
func (d *Definition) parseFront(lines []string) error {
	toolsKey, inTools := false, false
	list := &d.Tools
	unquote := func(s string) string { return strings.Trim(strings.TrimSpace(s), `"'`) }
	addTools := func(v string) {
		if i := strings.Index(v, " #"); i >= 0 {
			v = v[:i] // a trailing YAML comment
		}
		v = strings.TrimSpace(v)
		if strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]") {
			v = v[1 : len(v)-1]
		}
		for _, t := range strings.Split(v, ",") {
			if t = unquote(t); t != "" {
				*list = append(*list, t)
			}
		}
	}
	for _, line := range lines {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		indented := line[0] == ' ' || line[0] == '\t'
		if inTools && (indented || strings.HasPrefix(trimmed, "- ") || trimmed == "-") {
			item, ok := strings.CutPrefix(trimmed, "-")
			if ok {
				addTools(item)
			}
			continue
		}
		inTools = false
		if indented {
			continue // a continuation of some other key
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "name":
			d.Name = unquote(v)
		case "description":
			d.Description = unquote(v)
		case "model":
			d.Model = unquote(v)
		case "tools", "disallowedTools":
			list = &d.Tools
			if strings.TrimSpace(k) == "tools" {
				toolsKey = true
			} else {
				list = &d.DisallowedTools
			}
			if strings.TrimSpace(v) == "" {
				inTools = true
			} else {
				addTools(v)
			}
		default:
			key := strings.TrimSpace(k)
			note := key + ": not used by dsh; ignored"
			if h := unusedAgentKeys[key]; h != "" {
				note = key + ": not used by dsh (" + h + "); ignored"
			}
			d.Notes = append(d.Notes, note)
		}
	}
	if toolsKey && len(d.Tools) == 0 {
		return errors.New(`"tools" is present but names no tool; refusing this agent rather than giving it every tool (list tools as "tools: Read, Grep" or as "- Read" lines)`)
	}
	return nil
}
