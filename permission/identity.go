package permission

import (
	"context"
	"encoding/json"
	"fmt"
	iofs "io/fs"
	"path/filepath"
	"sync"

	"github.com/bmatcuk/doublestar/v4"

	dshfs "github.com/dshq/dsh/fs"
	"github.com/dshq/dsh/tool"
)

// A rule names paths, but a file can have several: a hard link made inside
// the workspace to a file a Read rule denies is the same file under a name
// the rule does not match. So where a file has more than one name (its
// link count), the decision is about the file's identity: if any name the
// file has under a deny rule's directory is denied, every name is. The
// other names are found by walking the directories the deny rules cover
// (their literal base), which is bounded: a file with several names whose
// identity cannot be checked within the bound is refused. What remains
// open: a name outside every directory a rule covers cannot be denied by
// one, and a copy (not a link) is a new file that no rule about the old
// one names — the sandbox must keep the content itself out of reach.

// maxIdentityWalk bounds the entries visited to find a file's other
// names.
const maxIdentityWalk = 50000

// linkedToDenied reports why the file real (resolved; fi its lstat, or nil
// to stat it now) is denied to toolName through another of its names, or
// "". Only regular files with more than one link are checked.
func (d *decider) linkedToDenied(toolName, real string, fi iofs.FileInfo) string {
	if fi == nil {
		if fi = d.lstat(real); fi == nil {
			return ""
		}
	}
	id := statID(fi)
	if !fi.Mode().IsRegular() || id.Links <= 1 {
		return ""
	}
	return d.identityDenied(toolName, real, id)
}

// identityDenied is linkedToDenied for a file whose identity is known.
func (d *decider) identityDenied(toolName, real string, id dshfs.FileID) string {
	if id.Links <= 1 || id.Inode == 0 {
		return ""
	}
	tools := []string{toolName}
	switch toolName {
	case toolWrite, toolEdit:
		tools = []string{toolWrite, toolEdit}
	case toolGlob, toolGrep, toolLS:
		tools = []string{toolRead, toolName}
	}
	realCwd, _ := d.workspace()
	for _, r := range d.deny() {
		applies := false
		for _, t := range tools {
			applies = applies || r.kind == kindPath && r.appliesTo(t)
		}
		if !applies {
			continue
		}
		base := r.path.base
		if r.path.rel {
			b, _ := doublestar.SplitPattern(r.path.pat)
			base = filepath.Join(realCwd, b)
		}
		found, complete := findName(base, id, func(p string) bool { return r.path.matches(p, realCwd) })
		switch {
		case found != "":
			return fmt.Sprintf("%s is another name (a hard link) of %s, which permission rule %s from %s denies", real, found, r.Text, r.Source)
		case !complete:
			return fmt.Sprintf("%s has %d names (hard links), and too many files lie under %s, which permission rule %s from %s covers, to check that none of them is this file", real, id.Links, base, r.Text, r.Source)
		}
	}
	return ""
}

// findName walks dir for a regular file with identity id whose path match
// accepts. complete is false when the walk stopped at its bound.
func findName(dir string, id dshfs.FileID, match func(string) bool) (found string, complete bool) {
	if dir == "" {
		return "", true
	}
	seen := 0
	complete = true
	_ = filepath.WalkDir(dir, func(p string, de iofs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if seen++; seen > maxIdentityWalk {
			complete = false
			return filepath.SkipAll
		}
		if !de.Type().IsRegular() {
			return nil
		}
		fi, err := de.Info()
		if err != nil {
			return nil
		}
		if got := statID(fi); got.Inode == id.Inode && got.Device == id.Device && match(p) {
			found = p
			return filepath.SkipAll
		}
		return nil
	})
	return found, complete
}

// decidedFiles keeps, per call, the file its decision was about, until
// the tool confirms it (ConfirmFile). Calls that never run leave theirs;
// the set is bounded.
type decidedFiles struct {
	mu    sync.Mutex
	files map[string]string
}

const maxDecidedFiles = 4096

func decidedKey(call tool.Call) string { return sessionOf(call) + "\x00" + string(call.ID) }

func (f *decidedFiles) note(call tool.Call, d Decision) {
	if d.File == "" || d.Behavior == Deny {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.files == nil || len(f.files) >= maxDecidedFiles {
		f.files = map[string]string{}
	}
	f.files[decidedKey(call)] = d.File
}

func (f *decidedFiles) take(call tool.Call) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.files[decidedKey(call)]
	delete(f.files, decidedKey(call))
	return p, ok
}

// ConfirmFile is the check the read, write and edit tools make once they
// have opened (or are about to replace) the file a call names, so that the
// file decided on is the file used. key is the path the tool resolved
// just now (the provider then opens it without following symbolic
// links); id is the identity of the file opened, when known.
//
// When key is not the file the call's decision was about — a symbolic
// link changed between the decision and the tool's run, say — the call is
// decided again on key, and refused unless that allows it outright. A
// file with several names (hard links) is refused when another of its
// names is denied. The error is what the model reads.
func (c *Checker) ConfirmFile(ctx context.Context, call tool.Call, key string, id dshfs.FileID) error {
	name := canonical(call.Name)
	decided, ok := c.decided.take(call)
	if !ok || decided != key {
		again := call
		var args map[string]any
		if json.Unmarshal(call.Args, &args) == nil {
			args["file_path"] = key
			if b, err := json.Marshal(args); err == nil {
				again.Args, again.Raw = b, string(b)
			}
		}
		if d := c.Decide(ctx, again, cwdOf(call)); d.Behavior != Allow {
			if ok {
				return fmt.Errorf("permission: the path now leads to %s, not to %s, which was decided on (a symbolic link changed meanwhile): %s", key, decided, d.Reason)
			}
			return fmt.Errorf("permission: %s", d.Reason)
		}
	}
	if id.Links > 1 {
		mode, rules := c.rulesFor(sessionOf(call))
		cwd := cwdOf(call)
		if cwd == "" {
			cwd = c.cwd
		}
		d := &decider{c: c, mode: mode, rules: rules, cwd: filepath.Clean(cwd), call: call, name: name}
		if why := d.identityDenied(name, key, id); why != "" {
			return fmt.Errorf("permission: %s", why)
		}
	}
	return nil
}
