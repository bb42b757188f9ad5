package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Policy is what one command may do, compiled from the mode, the workspace
// roots and the permission rules by [Compile]. It is plain data: the Linux
// helper receives it as JSON and applies it mechanically.
type Policy struct {
	Mode Mode `json:"mode"`
	// Writable are the directories (or files) commands may write, besides
	// the private /tmp the implementation provides.
	Writable []Entry `json:"writable,omitempty"`
	// Protected are paths inside writable ones that stay read-only.
	Protected []Entry `json:"protected,omitempty"`
	// Pinned are directories that must not be renamed or removed (so a
	// protected path inside cannot be swapped for a writable copy: `mv .git
	// x; mkdir -p .git/hooks`).
	Pinned []Entry `json:"pinned,omitempty"`
	// Hidden are paths masked from reads: an empty read-only directory over
	// a directory, an empty file over a file.
	Hidden []Entry `json:"hidden,omitempty"`
	// Unenforced lists rules the kernel cannot apply, with why; the
	// permission layer still checks them for the tools it sees.
	Unenforced []string `json:"unenforced,omitempty"`
	// Cache is where sandboxed commands keep their private caches (the Go
	// build and module caches, npm's, XDG_CACHE_HOME) across commands and
	// sessions: a directory of dsh's home, written only by sandboxed
	// commands and read only by them. Empty: caches live as long as dsh.
	Cache string `json:"cache,omitempty"`
	// Network says what may be reached.
	Network NetworkPolicy `json:"network"`
	// Limits are resource limits for every process of the command.
	Limits Limits `json:"limits,omitzero"`
}

// Entry is a path and why the policy names it (the rule and its file, or
// the mode), for `dsh sandbox explain`.
type Entry struct {
	Path string `json:"path"`
	Why  string `json:"why"`
	// Refuse, on a hidden path, makes reads of it fail (EACCES: the
	// program says "Permission denied") instead of finding it empty. Read
	// deny rules refuse: the user asked for the file to be unreadable, and
	// a visible refusal tells the model why. The built-in secret stores
	// read as empty, so that tools which tolerate a missing ~/.npmrc or
	// ~/.ssh keep working.
	Refuse bool `json:"refuse,omitempty"`
}

// NetworkPolicy is the network part of a policy.
type NetworkPolicy struct {
	// Allow lists the domains the proxy lets through ("github.com",
	// "*.npmjs.org"); empty means no network at all.
	Allow []string `json:"allow,omitempty"`
	// AllowWhy says where each allowed domain came from, by index.
	AllowWhy []string `json:"allowWhy,omitempty"`
	// Ask, when set, is asked about a host the allow-list refuses while
	// the command runs: true lets the connection through (the user said
	// yes). It stays with dsh; the helper never sees it.
	Ask func(host string, port int) bool `json:"-"`
}

// Paths returns the paths of entries.
func Paths(es []Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Path
	}
	return out
}

// PathRule is a permission rule that names files: its tool (Read, Edit,
// Write, in Claude's or dsh's spelling), its path specifier and behavior.
type PathRule struct {
	// Text is the rule as written: "Read(~/.ssh/**)", "Edit(./dist/**)",
	// "WebFetch(domain:github.com)".
	Text string
	// Allow is true for an allow rule, false for a deny rule (ask rules
	// do not change the sandbox: the parser still asks).
	Allow bool
	// Source names the settings file (or the flag, or "session").
	Source string
}

// Inputs is what a policy is compiled from.
type Inputs struct {
	Mode Mode
	// Cwd is the session's working directory, the first workspace root.
	Cwd string
	// Roots are the additional directories (--add-dir,
	// permissions.additionalDirectories), absolute.
	Roots []string
	// Home is the user's home directory (for ~ and the secret stores).
	Home string
	// DshHome is $DSH_HOME: sessions, logs, credentials, trust.
	DshHome string
	// Rules are the allow and deny rules in force.
	Rules []PathRule
	// Network is sandbox.network.allow.
	Network []string
	// Limits is sandbox.limits.
	Limits Limits
}

// SecretStores are the usual places credentials live, relative to the
// home directory. They are hidden from sandboxed commands unless a Read
// allow rule names them.
var SecretStores = []string{
	".ssh", ".aws", ".azure", ".config/gcloud", ".config/gh", ".docker/config.json",
	".netrc", ".git-credentials", ".gnupg", ".kube", ".npmrc", ".pypirc",
	".cargo/credentials", ".cargo/credentials.toml", ".terraform.d/credentials.tfrc.json",
	".claude/.credentials.json", ".codex/auth.json", ".password-store", ".vault-token",
}

// ProtectedNames are paths, relative to each writable root, that stay
// read-only in workspace-write: what runs code outside the sandbox later
// (git hooks and the config that can name programs) and the project's
// agent settings. .git itself is pinned so it cannot be moved aside.
var ProtectedNames = []string{
	".git/hooks", ".git/config", ".git/config.worktree", ".git/modules", ".git/info",
	".dsh", ".claude", ".codex", ".mcp.json",
}

// maxGlobMatches bounds how many files one Read deny pattern with wildcards
// may expand to; beyond it the pattern is reported as not enforced.
const maxGlobMatches = 2000

// Compile turns inputs into a policy. It never widens the mode: rules only
// add hidden and protected paths, and Edit or Write allow rules add
// writable ones in workspace-write.
func Compile(in Inputs) (*Policy, error) {
	if _, err := ParseMode(string(in.Mode)); err != nil {
		return nil, err
	}
	if !filepath.IsAbs(in.Cwd) {
		return nil, fmt.Errorf("sandbox: working directory %q is not absolute", in.Cwd)
	}
	p := &Policy{Mode: in.Mode, Limits: in.Limits}
	for _, d := range in.Network {
		p.Network.Allow = append(p.Network.Allow, d)
		p.Network.AllowWhy = append(p.Network.AllowWhy, "sandbox.network.allow")
	}
	if !in.Mode.Confines() {
		return p, nil
	}

	roots := []Entry{{Path: filepath.Clean(in.Cwd), Why: "workspace (the session's directory)"}}
	for _, r := range in.Roots {
		roots = append(roots, Entry{Path: filepath.Clean(r), Why: "additional directory"})
	}

	var readAllow []string // absolute patterns of Read allow rules
	for _, r := range in.Rules {
		tool, spec, ok := splitRule(r.Text)
		if !ok {
			continue
		}
		why := "rule " + r.Text
		if r.Source != "" {
			why += " (" + r.Source + ")"
		}
		if tool == "web_fetch" {
			if d, ok := strings.CutPrefix(spec, "domain:"); ok && r.Allow && d != "" {
				p.Network.Allow = append(p.Network.Allow, d)
				p.Network.AllowWhy = append(p.Network.AllowWhy, why)
			}
			continue
		}
		if tool != "read" && tool != "edit" && tool != "write" {
			continue
		}
		pat, err := absPattern(spec, in.Cwd, in.Home)
		if err != nil {
			p.Unenforced = append(p.Unenforced, fmt.Sprintf("%s: %v", why, err))
			continue
		}
		switch {
		case tool == "read" && r.Allow:
			readAllow = append(readAllow, pat)
		case tool == "read":
			p.hide(pat, why)
		case r.Allow && in.Mode == ModeWorkspaceWrite:
			base, rest := doublestar.SplitPattern(pat)
			if !coversAll(rest) {
				base = filepath.Dir(base)
			}
			if !slices.ContainsFunc(roots, func(e Entry) bool { return within(base, e.Path) }) {
				p.Writable = append(p.Writable, Entry{Path: base, Why: why})
			}
		case !r.Allow && in.Mode == ModeWorkspaceWrite:
			p.protect(pat, why)
		}
	}
	if in.Mode == ModeWorkspaceWrite {
		if in.DshHome != "" {
			p.Cache = filepath.Join(filepath.Clean(in.DshHome), "sandbox", "cache")
		}
		p.Writable = append(roots, p.Writable...)
		for _, root := range roots {
			for _, name := range ProtectedNames {
				p.Protected = append(p.Protected, Entry{Path: filepath.Join(root.Path, name), Why: "workspace-write keeps it read-only"})
			}
			p.Pinned = append(p.Pinned, Entry{Path: filepath.Join(root.Path, ".git"), Why: "holds protected paths"})
		}
	}

	allowed := func(path string) bool {
		for _, pat := range readAllow {
			if covers(pat, path) {
				return true
			}
		}
		return false
	}
	if in.Home != "" {
		for _, s := range SecretStores {
			full := filepath.Join(in.Home, s)
			if allowed(full) {
				continue
			}
			p.Hidden = append(p.Hidden, Entry{Path: full, Why: "secret store (allow it with a Read rule)"})
		}
	}
	if in.DshHome != "" && !allowed(in.DshHome) {
		p.Hidden = append(p.Hidden, Entry{Path: filepath.Clean(in.DshHome), Why: "dsh's home: sessions, logs, trust"})
	}
	p.Hidden = dedupe(p.Hidden)
	p.Protected = dedupe(p.Protected)
	p.Writable = dedupe(p.Writable)
	return p, nil
}

// hide adds the paths a Read deny pattern covers: its literal directory
// when the rest matches everything below it, else the files it matches now.
func (p *Policy) hide(pat, why string) {
	for _, path := range p.expand(pat, why) {
		p.Hidden = append(p.Hidden, Entry{Path: path, Why: why, Refuse: true})
	}
}

func (p *Policy) protect(pat, why string) {
	for _, path := range p.expand(pat, why) {
		p.Protected = append(p.Protected, Entry{Path: path, Why: why})
	}
}

// expand lists what pat covers on the filesystem: the pattern's literal
// prefix when the rest is empty or "**", or else the current matches. A
// file created later under a wildcard pattern is not covered; that is
// recorded as unenforced.
func (p *Policy) expand(pat, why string) []string {
	base, rest := doublestar.SplitPattern(pat)
	if !hasMeta(pat) {
		return []string{filepath.FromSlash(pat)}
	}
	if coversAll(rest) {
		return []string{filepath.FromSlash(base)}
	}
	var out []string
	err := doublestar.GlobWalk(os.DirFS(base), rest, func(m string, _ os.DirEntry) error {
		out = append(out, filepath.Join(base, filepath.FromSlash(m)))
		if len(out) > maxGlobMatches {
			return errTooMany
		}
		return nil
	}, doublestar.WithNoFollow())
	switch {
	case errors.Is(err, errTooMany):
		p.Unenforced = append(p.Unenforced, fmt.Sprintf("%s: matches more than %d files; the kernel enforces none of them", why, maxGlobMatches))
		return nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		p.Unenforced = append(p.Unenforced, fmt.Sprintf("%s: %v", why, err))
	}
	p.Unenforced = append(p.Unenforced, fmt.Sprintf("%s: files matching it that are created later are not hidden by the kernel", why))
	return out
}

var errTooMany = errors.New("too many matches")

func coversAll(rest string) bool { return rest == "" || rest == "**" || rest == "**/*" }

func hasMeta(pat string) bool { return strings.ContainsAny(pat, `*?[{\`) }

// splitRule splits "Tool(spec)" and canonicalizes the tool name.
func splitRule(text string) (tool, spec string, ok bool) {
	text = strings.TrimSpace(text)
	i := strings.IndexByte(text, '(')
	if i <= 0 || !strings.HasSuffix(text, ")") {
		return "", "", false
	}
	tool = text[:i]
	switch tool {
	case "Read", "read":
		tool = "read"
	case "Edit", "edit", "MultiEdit":
		tool = "edit"
	case "Write", "write":
		tool = "write"
	case "WebFetch", "web_fetch":
		tool = "web_fetch"
	default:
		return "", "", false
	}
	return tool, strings.TrimSpace(text[i+1 : len(text)-1]), true
}

// absPattern resolves a rule's path specifier the way the permission layer
// does: "//abs" and "/abs" are absolute, "~/x" is under home, anything else
// is relative to the working directory.
func absPattern(spec, cwd, home string) (string, error) {
	s := strings.TrimSpace(spec)
	switch {
	case s == "":
		return "", errors.New("empty path")
	case s == "~" || strings.HasPrefix(s, "~/"):
		if home == "" {
			return "", errors.New("~ needs a home directory")
		}
		s = filepath.ToSlash(home) + s[1:]
	case strings.HasPrefix(s, "~"):
		return "", errors.New("~user paths are not supported")
	case strings.HasPrefix(s, "//"):
		s = s[1:]
	case strings.HasPrefix(s, "/"):
	default:
		s = filepath.ToSlash(cwd) + "/" + s
	}
	s = path.Clean(s)
	if !doublestar.ValidatePattern(s) {
		return "", fmt.Errorf("%q is not a valid glob pattern", spec)
	}
	return s, nil
}

// covers reports whether an allow pattern covers the whole of path: the
// pattern names it, or a directory above it, or it and everything below.
func covers(pat, p string) bool {
	p = filepath.ToSlash(p)
	base, rest := doublestar.SplitPattern(pat)
	if !hasMeta(pat) {
		return within(p, pat)
	}
	if coversAll(rest) && within(p, base) {
		return true
	}
	ok, _ := doublestar.Match(pat, p)
	return ok
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	p, dir = filepath.Clean(p), filepath.Clean(dir)
	if p == dir || dir == "/" {
		return true
	}
	return strings.HasPrefix(p, dir+string(filepath.Separator))
}

func dedupe(es []Entry) []Entry {
	seen := map[string]bool{}
	out := es[:0]
	for _, e := range es {
		if seen[e.Path] {
			continue
		}
		seen[e.Path] = true
		out = append(out, e)
	}
	return out
}
