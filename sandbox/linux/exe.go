package linux

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"syscall"
)

// HelperBinary is the name of the dedicated helper program
// (cmd/dsh-sandbox-helper). dsh uses it instead of re-executing itself
// when it sits in the same directory as dsh and comes from the same
// build: it starts in a third of dsh's time.
const HelperBinary = "dsh-sandbox-helper"

// FindHelper returns the dedicated helper next to exe (the running dsh),
// or why it cannot be used. It must be a regular executable file owned
// by exe's owner (or root) that nobody else may write, and its build
// (module version, Go version and, when either is stamped with its VCS
// revision, every build setting) must equal this program's. The helper
// also refuses, on every command, a plan of another format (planFormat),
// so a stale helper fails loudly instead of misreading a plan.
func FindHelper(exe string) (string, error) {
	p := filepath.Join(filepath.Dir(exe), HelperBinary)
	fi, err := os.Stat(p)
	if err != nil {
		return "", err
	}
	self, err := os.Stat(exe)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	sst, ok2 := self.Sys().(*syscall.Stat_t)
	switch {
	case !ok || !ok2:
		return "", errors.New("cannot read its owner")
	case !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0:
		return "", fmt.Errorf("%s is not an executable file", p)
	case fi.Mode()&0o022 != 0:
		return "", fmt.Errorf("%s may be written by others (mode %v)", p, fi.Mode().Perm())
	case st.Uid != sst.Uid && st.Uid != 0:
		return "", fmt.Errorf("%s belongs to another user", p)
	}
	theirs, err := readBuildInfo(p)
	if err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	mine, ok := debug.ReadBuildInfo()
	if !ok {
		return "", errors.New("this program has no build information")
	}
	if why := sameBuild(mine, theirs); why != "" {
		return "", fmt.Errorf("%s is from another build (%s)", p, why)
	}
	return p, nil
}

// sameBuild says how two builds differ ("" when they do not): the module
// and its version, the Go version and every build setting (VCS revision,
// modified flag and time, tags, flags).
func sameBuild(a, b *debug.BuildInfo) string {
	if a.Main.Path != b.Main.Path || a.Main.Version != b.Main.Version {
		return fmt.Sprintf("module %s@%s, not %s@%s", b.Main.Path, b.Main.Version, a.Main.Path, a.Main.Version)
	}
	if a.GoVersion != b.GoVersion {
		return fmt.Sprintf("%s, not %s", b.GoVersion, a.GoVersion)
	}
	set := func(bi *debug.BuildInfo) map[string]string {
		m := map[string]string{}
		for _, s := range bi.Settings {
			m[s.Key] = s.Value
		}
		return m
	}
	sa, sb := set(a), set(b)
	if sa["vcs.revision"] == "" && sb["vcs.revision"] == "" {
		// Neither is stamped (-buildvcs=false, a build outside a
		// checkout): nothing more to compare here; the plan's format,
		// which the helper checks on every command, still must match.
		return ""
	}
	for k, v := range sa {
		if sb[k] != v {
			return fmt.Sprintf("%s %q, not %q", k, sb[k], v)
		}
	}
	if len(sa) != len(sb) {
		return "different build settings"
	}
	return ""
}
