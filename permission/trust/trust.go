// Package trust remembers which project directories the user trusts, so the
// app applies a project's settings, hooks and MCP servers only after the user
// said so — and again after those files change.
//
// A repository is code someone else wrote: its .dsh/settings.json can allow
// every command, and its hooks and MCP servers run programs. Trust is
// therefore given to a directory *and* to the exact contents of its settings
// files: each entry stores the SHA-256 of every file named at trust time
// (a missing file has a hash too, so creating one later also revokes
// trust). Changing any of them makes the directory untrusted until the user
// trusts it again.
//
// The store is a JSON file in the user's state ($DSH_HOME/trust.json),
// written atomically (temporary file, then rename) so a crash never leaves
// half a file. Two dsh processes trusting projects at the same moment may
// lose one of the two entries (the last rename wins); the user is then
// asked again, which is the safe outcome.
package trust

import (
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
	"sync"
	"time"
)

// DefaultFile is the store's file name inside $DSH_HOME.
const DefaultFile = "trust.json"

// Store is the trust list at Path. The zero value is not usable; set Path.
// It is safe for concurrent use within a process.
type Store struct {
	Path string
	// Now stamps entries; nil means time.Now.
	Now func() time.Time

	mu sync.Mutex
}

// Entry is one trusted project.
type Entry struct {
	// Files maps each file named at trust time (relative to the project
	// directory when inside it) to "sha256:<hex>" of its contents, or
	// "missing".
	Files     map[string]string `json:"files"`
	TrustedAt time.Time         `json:"trustedAt"`
}

type document struct {
	Version  int              `json:"version"`
	Projects map[string]Entry `json:"projects"`
}

const version = 1

// ProjectFiles are the files whose contents trust covers for a project:
// what dsh applies only when the project is trusted — its settings (dsh's
// and Claude Code's), the Claude Code and Codex hook files and Codex's
// config.toml, its MCP servers, and the command, skill and agent files of
// .claude and .dsh (they carry allowed tools and run commands). Those are
// listed as they are now, so adding one changes the list and revokes
// trust. Memory files (CLAUDE.md, AGENTS.md) are not covered: they are
// text that grants nothing, and the agent edits them; they follow the
// project's trust all the same.
func ProjectFiles(dir string) []string {
	out := []string{
		filepath.Join(dir, ".dsh", "settings.json"), filepath.Join(dir, ".dsh", "settings.local.json"),
		filepath.Join(dir, ".claude", "settings.json"), filepath.Join(dir, ".claude", "settings.local.json"),
		filepath.Join(dir, ".codex", "hooks.json"), filepath.Join(dir, ".codex", "config.toml"), filepath.Join(dir, ".mcp.json"),
	}
	for _, base := range []string{".claude", ".dsh"} {
		out = append(out, markdownUnder(filepath.Join(dir, base, "commands"), -1)...)
		out = append(out, markdownUnder(filepath.Join(dir, base, "agents"), 0)...)
		skills, _ := filepath.Glob(filepath.Join(dir, base, "skills", "*", "SKILL.md"))
		sort.Strings(skills)
		out = append(out, skills...)
	}
	return out
}

// markdownUnder lists the .md files under root, depth directories deep
// (-1: any depth), sorted; none when root does not exist.
func markdownUnder(root string, depth int) []string {
	var out []string
	_ = filepath.WalkDir(root, func(path string, e iofs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if e.IsDir() {
			rel, _ := filepath.Rel(root, path)
			if rel != "." && depth >= 0 && strings.Count(rel, string(filepath.Separator))+1 > depth {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(e.Name(), ".md") {
			out = append(out, path)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// IsTrusted reports whether dir is trusted with files exactly as they are
// now. A directory trusted with other files (or none) is not trusted for
// these.
func (s *Store) IsTrusted(dir string, files ...string) (bool, error) {
	key, err := canonicalDir(dir)
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	doc, err := s.load()
	if err != nil {
		return false, err
	}
	e, ok := doc.Projects[key]
	if !ok {
		return false, nil
	}
	now, err := hashes(dir, files)
	if err != nil {
		return false, err
	}
	if len(now) != len(e.Files) {
		return false, nil
	}
	for name, h := range now {
		if e.Files[name] != h {
			return false, nil
		}
	}
	return true, nil
}

// Trust records dir as trusted with files as they are now, replacing any
// earlier entry for dir.
func (s *Store) Trust(dir string, files ...string) error {
	key, err := canonicalDir(dir)
	if err != nil {
		return err
	}
	hs, err := hashes(dir, files)
	if err != nil {
		return err
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	doc, err := s.load()
	if err != nil {
		return err
	}
	doc.Projects[key] = Entry{Files: hs, TrustedAt: now().UTC()}
	return s.save(doc)
}

// Revoke forgets dir. Revoking an untrusted directory is not an error.
func (s *Store) Revoke(dir string) error {
	key, err := canonicalDir(dir)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	doc, err := s.load()
	if err != nil {
		return err
	}
	if _, ok := doc.Projects[key]; !ok {
		return nil
	}
	delete(doc.Projects, key)
	return s.save(doc)
}

// List returns the trusted directories, sorted.
func (s *Store) List() ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	doc, err := s.load()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(doc.Projects))
	for k := range doc.Projects {
		out = append(out, k)
	}
	sort.Strings(out)
	return out, nil
}

// canonicalDir names a project by its absolute, symlink-resolved path, so
// /tmp/p and /private/tmp/p are one project.
func canonicalDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("trust: %w", err)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	return abs, nil
}

// hashes fingerprints files. A file inside dir is keyed by its path
// relative to dir, so the entry survives reaching the directory through a
// different (symlinked) spelling.
func hashes(dir string, files []string) (map[string]string, error) {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("trust: %w", err)
	}
	out := make(map[string]string, len(files))
	for _, f := range files {
		p := f
		if !filepath.IsAbs(p) {
			p = filepath.Join(absDir, p)
		}
		p = filepath.Clean(p)
		key := p
		if rel, err := filepath.Rel(absDir, p); err == nil && filepath.IsLocal(rel) {
			key = filepath.ToSlash(rel)
		}
		b, err := os.ReadFile(p)
		switch {
		case errors.Is(err, iofs.ErrNotExist):
			out[key] = "missing"
		case err != nil:
			return nil, fmt.Errorf("trust: reading %s: %w", p, err)
		default:
			sum := sha256.Sum256(b)
			out[key] = "sha256:" + hex.EncodeToString(sum[:])
		}
	}
	return out, nil
}

func (s *Store) load() (*document, error) {
	if s.Path == "" {
		return nil, errors.New("trust: store has no path")
	}
	doc := &document{Version: version, Projects: map[string]Entry{}}
	b, err := os.ReadFile(s.Path)
	if errors.Is(err, iofs.ErrNotExist) {
		return doc, nil
	}
	if err != nil {
		return nil, fmt.Errorf("trust: %w", err)
	}
	if err := json.Unmarshal(b, doc); err != nil {
		// A damaged trust file must not silently trust or untrust
		// anything; the user fixes or removes it.
		return nil, fmt.Errorf("trust: %s is not a valid trust list: %w", s.Path, err)
	}
	if doc.Version != version {
		return nil, fmt.Errorf("trust: %s has version %d; this dsh reads version %d", s.Path, doc.Version, version)
	}
	if doc.Projects == nil {
		doc.Projects = map[string]Entry{}
	}
	return doc, nil
}

func (s *Store) save(doc *document) error {
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("trust: %w", err)
	}
	dir := filepath.Dir(s.Path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("trust: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".trust-*.json")
	if err != nil {
		return fmt.Errorf("trust: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("trust: writing %s: %w", s.Path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("trust: writing %s: %w", s.Path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("trust: writing %s: %w", s.Path, err)
	}
	if err := os.Rename(tmp.Name(), s.Path); err != nil {
		return fmt.Errorf("trust: writing %s: %w", s.Path, err)
	}
	return nil
}

// Policy decides whether a project's own configuration applies: the
// settings pipeline's trust step, the same for every front door. A
// directory with none of [ProjectFiles] has nothing to trust; otherwise
// the user's earlier answer for exactly these files stands; failing that,
// Grant (--trust) trusts and records, else Ask (an interactive run) asks
// and records a yes.
type Policy struct {
	// Home is $DSH_HOME; the store is Home/trust.json.
	Home string
	// Grant trusts a project not trusted yet, and records it (--trust).
	Grant bool
	// Ask asks the user about a project (nil: never ask).
	Ask func(project string) bool
	// Ignored is told when a project's configuration stays ignored (nil:
	// nobody is).
	Ignored func(project string)
}

func (p Policy) store() *Store { return &Store{Path: filepath.Join(p.Home, DefaultFile)} }

// Decide settles trust for project, asking and recording as the policy
// says. Its signature is settings.Input.Trust's.
func (p Policy) Decide(project string) (bool, error) {
	ok, files, err := p.stored(project)
	if err != nil {
		return false, fmt.Errorf("trust: reading the trust list: %w", err)
	}
	if ok {
		return true, nil
	}
	grant := p.Grant
	if !grant && p.Ask != nil {
		grant = p.Ask(project)
	}
	if !grant {
		if p.Ignored != nil {
			p.Ignored(project)
		}
		return false, nil
	}
	if err := p.store().Trust(project, files...); err != nil {
		return false, fmt.Errorf("trust: recording trust: %w", err)
	}
	return true, nil
}

// Stored reports, without asking or recording, whether dir's own
// configuration may apply: it has none, or the user trusted exactly these
// files before (a session resumed from another directory).
func (p Policy) Stored(dir string) bool {
	ok, _, err := p.stored(dir)
	return err == nil && ok
}

func (p Policy) stored(dir string) (bool, []string, error) {
	files := ProjectFiles(dir)
	if !slices.ContainsFunc(files, func(f string) bool { _, err := os.Stat(f); return err == nil }) {
		return true, files, nil
	}
	ok, err := p.store().IsTrusted(dir, files...)
	return ok, files, err
}
