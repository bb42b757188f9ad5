package sandbox

import (
	"os"
	"path/filepath"
	"slices"
)

// Access says whether a command under p may read (write false) or write
// path, and which entry of the policy (or the mode) decides: what `dsh
// sandbox explain` prints for each file a command line names. path must
// be absolute; kept are the paths that stay visible in the sandbox besides
// the policy's own (the command's directory, the home). Symbolic links are resolved as far as the path exists, as
// the kernel resolves them before it checks.
func (p *Policy) Access(path string, write bool, kept ...string) (ok bool, why string) {
	if !p.Mode.Confines() {
		return true, string(p.Mode) + " confines nothing"
	}
	path = resolveExisting(filepath.Clean(path))
	for _, e := range p.Hidden {
		if within(path, resolveExisting(e.Path)) {
			if write {
				return false, "hidden and read-only: " + e.Why
			}
			if e.Refuse {
				return false, "unreadable: " + e.Why
			}
			return false, "hidden (reads as empty): " + e.Why
		}
	}
	if !write {
		return true, "reads are allowed everywhere that is not hidden"
	}
	for _, e := range p.Protected {
		if within(path, resolveExisting(e.Path)) {
			return false, "read-only: " + e.Why
		}
	}
	for _, e := range p.Writable {
		if within(path, resolveExisting(e.Path)) {
			return true, e.Why
		}
	}
	if within(path, "/tmp") {
		// The host's /tmp is replaced by a private one, except the
		// paths that stay visible over it (the workspace, the home, the
		// policy's own paths); with any of those under /tmp only a
		// subdirectory of the private /tmp is writable (see
		// sandbox/linux's TmpDir).
		shown := slices.Clone(kept)
		for _, e := range slices.Concat(p.Writable, p.Protected, p.Pinned) {
			shown = append(shown, e.Path)
		}
		underTmp, hostPath := false, false
		for _, k := range shown {
			k = resolveExisting(filepath.Clean(k))
			if within(k, "/tmp") {
				underTmp = true
			}
			if within(path, k) {
				hostPath = true
			}
		}
		switch {
		case !hostPath && !underTmp:
			return true, "lands in the sandbox's private /tmp, not the host's"
		case !hostPath && within(path, "/tmp/.dsh-tmp"):
			return true, "lands in the sandbox's private temporary directory ($TMPDIR)"
		case !hostPath:
			return false, "the host's /tmp is replaced by a private one, writable here only in $TMPDIR (/tmp/.dsh-tmp: host paths under /tmp stay visible)"
		}
	}
	if p.Mode == ModeReadOnly {
		return false, "read-only mode writes nowhere but a private /tmp"
	}
	return false, "outside the workspace and every writable directory"
}

// resolveExisting resolves the symbolic links of the longest existing
// prefix of path and appends the rest.
func resolveExisting(path string) string {
	rest := ""
	for p := path; ; p = filepath.Dir(p) {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		if _, err := os.Lstat(p); err == nil {
			return filepath.Join(p, rest) // a dangling link: as written
		}
		if p == filepath.Dir(p) {
			return path
		}
		rest = filepath.Join(filepath.Base(p), rest)
	}
}
