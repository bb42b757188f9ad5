// Package memory is project memory: the instruction files Claude Code and
// Codex users keep beside their code (CLAUDE.md, AGENTS.md and their
// relatives), found as both tools find them and put into the system
// prompt, naming each file.
//
// Where files are looked for, in the order they enter the prompt (later
// files are more specific and win where they disagree):
//
//  1. The user's own: ~/.claude/CLAUDE.md, Codex's AGENTS.override.md or
//     else AGENTS.md in $CODEX_HOME (~/.codex), and $DSH_HOME/AGENTS.md.
//  2. The project's: every directory from the repository root (the nearest
//     ancestor holding .git; the working directory when there is none)
//     down to the working directory. In each: AGENTS.override.md, or else
//     AGENTS.md (Codex takes one of the two), then CLAUDE.md,
//     .claude/CLAUDE.md and CLAUDE.local.md.
//  3. Nested: when the agent first reads or edits a file in a directory
//     below the working directory, the memory files of the directories
//     between are attached to that tool result, once per session.
//
// A file may import others with @path (relative to the importing file, or
// ~/…), outside code spans and fenced blocks, five levels deep at most. An
// import is taken only when it is a regular file inside the project or the
// user's home, not refused by a permission deny rule on reading, and not
// already on the chain that imported it (a cycle is refused and said so).
// A project's file may import from the home directory only Markdown and
// text files, so a repository cannot pull ~/.ssh/id_rsa into a prompt sent
// to the provider. The same file reached twice (CLAUDE.md as a link to
// AGENTS.md, or an @AGENTS.md import) is taken once.
//
// Project files count only once the user trusts the project, as its hooks
// do; `dsh doctor` lists every file found, taken or skipped with the
// reason. Sizes are capped per file and in total, and what is cut is said.
package memory

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Limits. A file longer than MaxFileBytes is cut with a note; once the
// files taken reach MaxTotalBytes the rest are left out, with a note.
const (
	MaxFileBytes   = 64 << 10
	MaxTotalBytes  = 192 << 10
	MaxImportDepth = 5
)

// Scope says whose a memory file is.
type Scope string

// Scopes.
const (
	// ScopeUser is the user's own files (home directory, $DSH_HOME).
	ScopeUser Scope = "user"
	// ScopeProject is a file of the project, from the root down to the
	// working directory.
	ScopeProject Scope = "project"
	// ScopeNested is a file of a subdirectory, loaded when the agent first
	// touches a file there.
	ScopeNested Scope = "nested"
)

// File is a memory file that was taken into the prompt.
type File struct {
	Path  string `json:"path"`
	Scope Scope  `json:"scope"`
	// ImportedBy is the file whose @import brought this one in ("" for a
	// file found by its name).
	ImportedBy string `json:"importedBy,omitempty"`
	// Text is what the prompt carries: the file's text, cut at
	// MaxFileBytes with a note when longer.
	Text string `json:"-"`
	// Size is the file's size in bytes; Truncated says Text was cut.
	Size      int64 `json:"size"`
	Truncated bool  `json:"truncated,omitempty"`
}

// Skip is a memory file (or import) found and left out, with why.
type Skip struct {
	Path string `json:"path"`
	// Reason is one of the Skip* reasons.
	Reason string `json:"reason"`
	// Detail says more ("imported by …", which file shadows it).
	Detail string `json:"detail,omitempty"`
}

// Reasons a file is left out.
const (
	SkipUntrusted  = "untrusted"   // the project is not trusted yet
	SkipShadowed   = "shadowed"    // AGENTS.override.md in the same directory wins
	SkipEmpty      = "empty"       // nothing but white space
	SkipNotRegular = "not-regular" // a directory, FIFO, device, or a link leading outside
	SkipOutside    = "outside"     // an import outside the project and the home directory
	SkipCycle      = "cycle"       // an import of a file already on the import chain
	SkipDepth      = "depth"       // more than MaxImportDepth imports deep
	SkipDenied     = "denied"      // a permission deny rule forbids reading it
	SkipBudget     = "budget"      // MaxTotalBytes was reached
	SkipUnreadable = "unreadable"  // the file could not be read
	SkipDuplicate  = "duplicate"   // the same file was taken already
)

// Set is the memory of one working directory: the files taken, in prompt
// order, and those left out.
type Set struct {
	// Root is the project root the walk started from.
	Root    string
	Files   []File
	Skipped []Skip
}

// Candidate names, per directory, in the order they are taken.
var (
	projectNames = []string{"CLAUDE.md", filepath.Join(".claude", "CLAUDE.md"), "CLAUDE.local.md"}
	codexNames   = []string{"AGENTS.override.md", "AGENTS.md"}
)

// Locations says where a [Loader] looks outside the project.
type Locations struct {
	// UserHome is the user's home directory (~/.claude/CLAUDE.md, ~ in
	// imports); empty skips the user's files.
	UserHome string
	// CodexHome is $CODEX_HOME (default ~/.codex).
	CodexHome string
	// DSHHome is $DSH_HOME (its AGENTS.md).
	DSHHome string
}

// userFiles are the user-level candidates, in order: each inner list is
// "the first non-empty one of these".
func (l Locations) userFiles() [][]string {
	var out [][]string
	if l.UserHome != "" {
		out = append(out, []string{filepath.Join(l.UserHome, ".claude", "CLAUDE.md")})
	}
	codex := l.CodexHome
	if codex == "" && l.UserHome != "" {
		codex = filepath.Join(l.UserHome, ".codex")
	}
	if codex != "" {
		out = append(out, []string{filepath.Join(codex, "AGENTS.override.md"), filepath.Join(codex, "AGENTS.md")})
	}
	if l.DSHHome != "" {
		out = append(out, []string{filepath.Join(l.DSHHome, "AGENTS.md")})
	}
	return out
}

// ProjectRoot is the nearest ancestor of dir (dir included) holding .git,
// or dir itself when there is none.
func ProjectRoot(dir string) string {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}

// dirsDown lists the directories from root down to dir (both included);
// dir must be root or inside it.
func dirsDown(root, dir string) []string {
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return []string{dir}
	}
	out := []string{root}
	cur := root
	for part := range strings.SplitSeq(rel, string(filepath.Separator)) {
		cur = filepath.Join(cur, part)
		out = append(out, cur)
	}
	return out
}

// inside reports whether path is dir or lies inside it (both clean and
// absolute).
func inside(dir, path string) bool {
	if dir == "" {
		return false
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !filepath.IsAbs(rel) && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// readText reads at most limit bytes of the regular file at real (already
// resolved), without blocking on a FIFO and without following a final
// link. size is the file's size; cut says text was cut at limit.
func readText(real string, limit int) (text string, size int64, cut bool, reason string) {
	f, err := openNoBlock(real)
	if err != nil {
		return "", 0, false, SkipUnreadable
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", 0, false, SkipUnreadable
	}
	if !st.Mode().IsRegular() {
		return "", 0, false, SkipNotRegular
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return "", 0, false, SkipUnreadable
	}
	size = st.Size()
	if len(b) > limit {
		b, cut = trimUTF8(b[:limit]), true
		if size <= int64(limit) {
			size = int64(limit) + 1 // grew since the stat
		}
	}
	return string(b), size, cut, ""
}

// trimUTF8 drops a partial UTF-8 sequence at the end of b.
func trimUTF8(b []byte) []byte {
	for i := 1; i < utf8.UTFMax && len(b) > 0; i++ {
		if r, n := utf8.DecodeLastRune(b); r != utf8.RuneError || n != 1 {
			break
		}
		b = b[:len(b)-1]
	}
	return b
}
