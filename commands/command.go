// Package commands is custom slash commands: Markdown prompt templates
// Claude Code and Codex users keep in .claude/commands, ~/.claude/commands
// and ~/.codex/prompts (and dsh's .dsh/commands, $DSH_HOME/commands), run
// as "/name args" from the terminal, from dsh -p and from editors over ACP.
//
// A command file is front matter and a body. The front matter may say
// description, argument-hint, allowed-tools (allow rules in force for the
// turn the command runs in, and while its !`cmd` lines run) and model (the
// model of that turn). The body is the prompt: $ARGUMENTS is the whole
// argument line, $1 … $9 its words (quoted words stay whole); @path
// inlines a file the permission layer lets the read tool read; !`cmd` runs
// a command through the bash tool, so through the permission layer and the
// sandbox, and inlines its output. A body without $ARGUMENTS gets the
// arguments appended, as Claude Code does.
//
// Names come from the file's path under its directory, subdirectories
// separated by ":" (frontend/component.md is /frontend:component, which
// /component also reaches while no other command is named so). Plugin
// bundles' commands are /plugin:name; Codex prompts are /prompts:name.
// Where two directories define one name, the later in this order wins:
// the built-in /init, Codex prompts, plugin bundles, ~/.claude/commands,
// $DSH_HOME/commands, the project's .claude/commands, its .dsh/commands.
// Project commands count only once the project is trusted.
package commands

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dshq/dsh/internal/frontmatter"
)

// Command is one slash command.
type Command struct {
	// Name is what follows the slash ("frontend:component").
	Name         string
	Description  string
	ArgumentHint string
	// AllowedTools are permission rules allowed for the command's turn.
	AllowedTools []string
	// Model is the model of the command's turn ("" keeps the session's).
	Model string
	// Body is the prompt template.
	Body string
	// Path is the file it came from ("" for a built-in); Source says what
	// kind of directory ("project", "user", "plugin formatter", "Codex
	// prompts", "built-in").
	Path   string
	Source string
}

// Summary is the one line a command list shows: the description, else the
// body's first line.
func (c *Command) Summary() string {
	if c.Description != "" {
		return c.Description
	}
	for line := range strings.SplitSeq(c.Body, "\n") {
		if line = strings.TrimSpace(strings.TrimLeft(line, "# ")); line != "" {
			if r := []rune(line); len(r) > 80 {
				line = string(r[:79]) + "…"
			}
			return line
		}
	}
	return ""
}

// Dir is one directory commands are read from.
type Dir struct {
	Path string
	// Source names the directory's kind for lists and dsh doctor.
	Source string
	// Prefix starts every name from this directory ("formatter:" for a
	// plugin's, "prompts:" for Codex's).
	Prefix string
	// Flat directories hold commands only at their top (Codex prompts).
	Flat bool
}

// Problem is a command file that could not be used.
type Problem struct {
	Path   string
	Reason string
}

// Shadow is a command a later directory redefined.
type Shadow struct {
	Name, Path, By string
}

// Set is the commands of one working directory.
type Set struct {
	byName   map[string]*Command
	alias    map[string]*Command
	list     []*Command
	Problems []Problem
	Shadowed []Shadow
}

// Lookup finds a command by its name, or by the last part of a namespaced
// name when no other command has it.
func (s *Set) Lookup(name string) (*Command, bool) {
	if s == nil {
		return nil, false
	}
	if c, ok := s.byName[name]; ok {
		return c, true
	}
	c, ok := s.alias[name]
	return c, ok && c != nil
}

// All returns the commands sorted by name.
func (s *Set) All() []*Command {
	if s == nil {
		return nil
	}
	return s.list
}

// MaxFileBytes bounds a command file.
const MaxFileBytes = 256 << 10

// Load reads the directories in order (a later one's command of the same
// name wins) and adds builtins first. Missing directories are fine.
func Load(builtins []*Command, dirs []Dir) *Set {
	s := &Set{byName: map[string]*Command{}, alias: map[string]*Command{}}
	add := func(c *Command) {
		if prev, ok := s.byName[c.Name]; ok {
			s.Shadowed = append(s.Shadowed, Shadow{Name: c.Name, Path: prev.Path, By: c.Path})
		}
		s.byName[c.Name] = c
	}
	for _, c := range builtins {
		add(c)
	}
	for _, d := range dirs {
		for _, c := range s.readDir(d) {
			add(c)
		}
	}
	for _, c := range s.byName {
		s.list = append(s.list, c)
		if i := strings.LastIndexByte(c.Name, ':'); i >= 0 {
			short := c.Name[i+1:]
			if _, taken := s.alias[short]; taken {
				s.alias[short] = nil // ambiguous: only the full name works
			} else {
				s.alias[short] = c
			}
		}
	}
	sort.Slice(s.list, func(i, j int) bool { return s.list[i].Name < s.list[j].Name })
	return s
}

func (s *Set) readDir(d Dir) []*Command {
	var out []*Command
	root := d.Path
	walk := func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			if path != root && !os.IsNotExist(err) {
				s.Problems = append(s.Problems, Problem{Path: path, Reason: err.Error()})
			}
			return nil
		}
		if e.IsDir() {
			if path != root && (d.Flat || strings.HasPrefix(e.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(e.Name(), ".md") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		name := d.Prefix + strings.ReplaceAll(strings.TrimSuffix(rel, ".md"), string(filepath.Separator), ":")
		c, err := ReadFile(path, name, d.Source)
		if err != nil {
			s.Problems = append(s.Problems, Problem{Path: path, Reason: err.Error()})
			return nil
		}
		out = append(out, c)
		return nil
	}
	if _, err := os.Stat(root); err != nil {
		return nil
	}
	_ = filepath.WalkDir(root, walk)
	return out
}

// ReadFile reads one command file. Only a regular file is read (a link to
// one is followed), at most MaxFileBytes of it.
func ReadFile(path, name, source string) (*Command, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	if st.Size() > MaxFileBytes {
		return nil, fmt.Errorf("%d bytes, more than the %d KiB a command may have", st.Size(), MaxFileBytes>>10)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(string(b), name, path, source)
}

// Parse reads a command from its text.
func Parse(text, name, path, source string) (*Command, error) {
	doc, err := frontmatter.Parse(text)
	if err != nil {
		return nil, err
	}
	c := &Command{Name: name, Path: path, Source: source, Body: strings.TrimSpace(doc.Body),
		Description: doc.String("description"), ArgumentHint: doc.Text("argument-hint"), Model: doc.String("model")}
	c.AllowedTools, _ = doc.List("allowed-tools")
	return c, nil
}
