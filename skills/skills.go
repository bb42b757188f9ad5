// Package skills is Claude Code's agent skills: folders holding a SKILL.md
// (front matter name, description, allowed-tools; a body of instructions)
// and whatever files the instructions use. Only each skill's name and
// description enter the system prompt, a line of at most about a hundred
// tokens; the model loads a skill's body when a task matches with the
// skill tool (Claude Code's Skill), and reads its supporting files with
// the ordinary tools. While a skill is active — from the call that loaded
// it to the end of that turn — its allowed-tools are allow rules for the
// session.
//
// Skills are read from, lowest precedence first: plugin bundles' skills,
// ~/.claude/skills, $DSH_HOME/skills, and the project's .claude/skills and
// .dsh/skills (once the project is trusted). A later skill of the same name
// wins; dsh doctor says which was shadowed.
package skills

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/dshq/dsh/internal/frontmatter"
)

// Skill is one skill's index entry.
type Skill struct {
	Name        string
	Description string
	// AllowedTools are permission rules in force while the skill is active.
	AllowedTools []string
	// Dir is the skill's folder; Path its SKILL.md.
	Dir, Path string
	// Source says what kind of directory it came from ("project", "user",
	// "plugin formatter").
	Source string
	// Hidden skills (disable-model-invocation) are not offered to the model.
	Hidden bool
}

// Dir is a directory of skill folders.
type Dir struct {
	Path   string
	Source string
	// Prefix starts every skill name from this directory ("formatter:").
	Prefix string
}

// Problem is a skill folder that could not be used.
type Problem struct {
	Path   string
	Reason string
}

// Shadow is a skill a later directory redefined.
type Shadow struct {
	Name, Path, By string
}

// Set is the skills of one working directory.
type Set struct {
	byName   map[string]*Skill
	list     []*Skill
	Problems []Problem
	Shadowed []Shadow
}

// Lookup finds a skill by name.
func (s *Set) Lookup(name string) (*Skill, bool) {
	if s == nil {
		return nil, false
	}
	k, ok := s.byName[name]
	return k, ok
}

// All returns the skills sorted by name.
func (s *Set) All() []*Skill {
	if s == nil {
		return nil
	}
	return s.list
}

// Limits: how much of a SKILL.md's head is read for the index, and how big
// a body the skill tool returns.
const (
	headBytes    = 8 << 10
	MaxBodyBytes = 256 << 10
)

// Load reads the directories in order; a later skill of the same name wins.
func Load(dirs []Dir) *Set {
	s := &Set{byName: map[string]*Skill{}}
	for _, d := range dirs {
		entries, err := os.ReadDir(d.Path)
		if err != nil {
			if !os.IsNotExist(err) {
				s.Problems = append(s.Problems, Problem{Path: d.Path, Reason: err.Error()})
			}
			continue
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			dir := filepath.Join(d.Path, e.Name())
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				continue
			}
			path := filepath.Join(dir, "SKILL.md")
			if _, err := os.Stat(path); err != nil {
				s.Problems = append(s.Problems, Problem{Path: dir, Reason: "no SKILL.md in this skill folder"})
				continue
			}
			k, err := readIndex(path, e.Name(), d)
			if err != nil {
				s.Problems = append(s.Problems, Problem{Path: path, Reason: err.Error()})
				continue
			}
			if prev, ok := s.byName[k.Name]; ok {
				s.Shadowed = append(s.Shadowed, Shadow{Name: k.Name, Path: prev.Path, By: k.Path})
			}
			s.byName[k.Name] = k
		}
	}
	for _, k := range s.byName {
		s.list = append(s.list, k)
	}
	sort.Slice(s.list, func(i, j int) bool { return s.list[i].Name < s.list[j].Name })
	return s
}

// readIndex reads a SKILL.md's front matter (from its head only: the body
// is read when the skill is loaded).
func readIndex(path, folder string, d Dir) (*Skill, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(f, headBytes))
	if err != nil {
		return nil, err
	}
	doc, err := frontmatter.Parse(string(b))
	if err != nil && st.Size() > headBytes {
		// Front matter longer than the head: read the rest.
		rest, rerr := io.ReadAll(io.LimitReader(f, MaxBodyBytes))
		if rerr != nil {
			return nil, rerr
		}
		doc, err = frontmatter.Parse(string(append(b, rest...)))
	}
	if err != nil {
		return nil, err
	}
	if !doc.Has {
		return nil, fmt.Errorf("no front matter: a skill needs at least a description (---\\ndescription: …\\n---)")
	}
	k := &Skill{Name: doc.String("name"), Description: strings.TrimSpace(doc.String("description")), Dir: filepath.Dir(path), Path: path,
		Source: d.Source, Hidden: doc.Bool("disable-model-invocation")}
	if k.Name == "" {
		k.Name = folder
	}
	k.Name = d.Prefix + k.Name
	if k.Description == "" {
		return nil, fmt.Errorf("no description: the model chooses skills by their descriptions")
	}
	k.AllowedTools, _ = doc.List("allowed-tools")
	return k, nil
}

// Body reads the skill's instructions (the text after its front matter).
func (k *Skill) Body() (string, error) {
	st, err := os.Stat(k.Path)
	if err != nil {
		return "", err
	}
	if st.Size() > MaxBodyBytes {
		return "", fmt.Errorf("%s is %d bytes, more than the %d KiB a skill may have", k.Path, st.Size(), MaxBodyBytes>>10)
	}
	b, err := os.ReadFile(k.Path)
	if err != nil {
		return "", err
	}
	doc, err := frontmatter.Parse(string(b))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(doc.Body), nil
}

// MaxIndexLine bounds one skill's line in the prompt's index: about a
// hundred tokens (four bytes a token is the usual estimate for English).
const MaxIndexLine = 400

// IndexLine is the skill's line in the system prompt.
func (k *Skill) IndexLine() string {
	desc := strings.Join(strings.Fields(k.Description), " ")
	line := "- " + k.Name + ": " + desc
	if len(line) > MaxIndexLine {
		cut := line[:MaxIndexLine-len("…")]
		for len(cut) > 0 && !utf8.ValidString(cut) {
			cut = cut[:len(cut)-1]
		}
		line = cut + "…"
	}
	return line
}

// Index is the system prompt section: the skills the model may load.
func (s *Set) Index() string {
	var lines []string
	for _, k := range s.All() {
		if !k.Hidden {
			lines = append(lines, k.IndexLine())
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return "# Skills\n\nSkills are instructions for particular tasks, kept in folders. When a task matches a skill's description, load the skill with the skill tool first and follow it; read the files it mentions from its folder with the ordinary tools.\n\n" + strings.Join(lines, "\n")
}
