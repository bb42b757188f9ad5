package permission

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Files that make programs run code when they next run, without anyone
// running that code by name: git's configuration and hooks (git status
// runs core.fsmonitor; git commit runs hooks), direnv's .envrc (run on
// cd), npm's and yarn's configuration (script-shell, node-options,
// yarnPath), shell startup files, editor and devcontainer tasks, and the
// settings of dsh and the agents it imports (hooks, MCP servers). A write
// to one asks in every mode but bypassPermissions, acceptEdits included,
// unless an Edit or Write rule allows that file; plan mode refuses it
// like every write.
var (
	protectedDirs = map[string]bool{
		".git": true, ".hg": true, ".dsh": true, ".claude": true, ".codex": true, ".vscode": true,
		".idea": true, ".husky": true, ".devcontainer": true, ".direnv": true,
	}
	protectedNames = map[string]bool{
		".envrc": true, ".npmrc": true, ".yarnrc": true, ".yarnrc.yml": true, ".pnpmfile.cjs": true,
		".bashrc": true, ".bash_profile": true, ".bash_login": true, ".bash_logout": true, ".profile": true,
		".zshrc": true, ".zshenv": true, ".zprofile": true, ".zlogin": true, ".zlogout": true, ".kshrc": true,
		".mkshrc": true, ".cshrc": true, ".tcshrc": true, ".inputrc": true, ".gitconfig": true, ".gitmodules": true,
		".mcp.json": true, ".hgrc": true, ".direnvrc": true, ".pythonrc": true, ".pythonstartup": true, ".lesskey": true,
		".exrc": true, ".vimrc": true, ".nvimrc": true,
		// Hook managers run the commands their configuration names on
		// git commit and the like.
		".pre-commit-config.yaml": true, "lefthook.yml": true, ".lefthook.yml": true, "lefthook.yaml": true, ".overcommit.yml": true,
	}
)

// protectedFile reports which part of p (absolute, clean) makes it a file
// that configures code to run, or "".
// Names are compared without case: on a case-insensitive file system
// (macOS, Windows) .GIT/config is .git/config.
func protectedFile(p string) string {
	if base := filepath.Base(p); protectedNames[strings.ToLower(base)] {
		return base
	}
	for part := range strings.SplitSeq(filepath.ToSlash(p), "/") {
		if protectedDirs[strings.ToLower(part)] {
			return part + "/"
		}
	}
	return ""
}

// protectedWrite decides a write to a protected file, by any of its
// names: it asks unless the mode is bypassPermissions or an allow rule
// names the file.
func (d *decider) protectedWrite(abs, real, what string) (verdict, bool) {
	which := protectedFile(real)
	if which == "" {
		which = protectedFile(abs)
	}
	if which == "" || d.mode == ModeBypass {
		return verdict{}, false
	}
	if r := d.firstRule(d.allow(), toolWrite, func(r *rule) bool { return r.kind == kindPath && d.pathMatch(r, abs, real, true) }); r != nil {
		return verdict{}, false
	}
	return verdict{behavior: Ask, firm: true, reason: fmt.Sprintf("%s: %s configures programs that run code on their own (git hooks and settings, .envrc, npm and shell startup files, agent settings), so a change to it needs approval in every mode", what, which)}, true
}
