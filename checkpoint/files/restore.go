package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/dshq/dsh/internal/textdiff"
)

// Do is what a restore does to one path.
type Do string

// The actions of a restore.
const (
	// Write puts the recorded content (and mode) of a file or link in place.
	Write Do = "write"
	// Chmod changes only the permissions of a file or directory.
	Chmod Do = "chmod"
	// Remove deletes a file or link the target checkpoint did not have.
	Remove Do = "remove"
	// Mkdir creates a directory the target checkpoint had.
	Mkdir Do = "mkdir"
	// Rmdir deletes a directory the target checkpoint did not have, once
	// what it held is gone; one still holding files (ignored ones, say)
	// is kept.
	Rmdir Do = "rmdir"
)

// Action is one step of a restore: Old is what is there now (as the
// current checkpoint recorded it), New what the target recorded.
type Action struct {
	Change
	Do Do
}

// Skip is a difference a restore leaves alone, with the reason.
type Skip struct {
	Change
	Why string
}

// Plan is what restoring a checkpoint would do: the actions that take the
// workspace from the state of checkpoint Current to that of Target, and
// the differences it cannot undo (ignored files, files over the size cap,
// special files, directories that were not scanned).
type Plan struct {
	Target, Current Hash
	Roots           []string
	Actions         []Action
	Skipped         []Skip
}

// Plan compares the current state (a checkpoint just taken) with the
// target.
func (s *Store) Plan(current, target Hash) (Plan, error) {
	p := Plan{Target: target, Current: current}
	cur, err := s.Checkpoint(current)
	if err != nil {
		return p, err
	}
	for _, r := range cur.Roots {
		p.Roots = append(p.Roots, r.Path)
	}
	changes, err := s.Diff(current, target)
	if err != nil {
		return p, err
	}
	for _, c := range changes {
		old, nu := c.Old, c.New
		if why := untracked(old, nu); why != "" {
			p.Skipped = append(p.Skipped, Skip{Change: c, Why: why})
			continue
		}
		switch {
		case !exists(nu):
			if old.Kind == Dir {
				p.Actions = append(p.Actions, Action{Change: c, Do: Rmdir})
			} else {
				p.Actions = append(p.Actions, Action{Change: c, Do: Remove})
			}
		case !exists(old):
			if nu.Kind == Dir {
				p.Actions = append(p.Actions, Action{Change: c, Do: Mkdir})
			} else {
				p.Actions = append(p.Actions, Action{Change: c, Do: Write})
			}
		case old.Kind != nu.Kind:
			// A file became a directory or the other way round: take the
			// one away, then put the other back.
			first, then := Remove, Write
			if old.Kind == Dir {
				first = Rmdir
			}
			if nu.Kind == Dir {
				then = Mkdir
			}
			p.Actions = append(p.Actions, Action{Change: Change{Path: c.Path, Old: old}, Do: first},
				Action{Change: Change{Path: c.Path, New: nu}, Do: then})
		case old.Hash == nu.Hash && nu.Kind != Link:
			p.Actions = append(p.Actions, Action{Change: c, Do: Chmod})
		default:
			p.Actions = append(p.Actions, Action{Change: c, Do: Write})
		}
	}
	return p, nil
}

// untracked says why a change cannot be undone ("" when it can): one of
// its sides is something a checkpoint records without content.
func untracked(old, nu Entry) string {
	for _, e := range []Entry{nu, old} {
		switch e.Kind {
		case Ignored, IgnoredDir:
			return "ignored"
		case Oversize:
			return "over the size cap"
		case Special:
			return "not a regular file"
		case Unscanned:
			return "not scanned"
		}
	}
	return ""
}

// Paths lists the paths the plan's actions touch, without repeats.
func (p Plan) Paths() []string {
	var out []string
	for _, a := range p.Actions {
		if n := len(out); n == 0 || out[n-1] != a.Path {
			out = append(out, a.Path)
		}
	}
	return out
}

// Diff renders the plan as a unified diff from the current state to the
// target (text files; binary files and links are named), so a dry run
// shows exactly what a restore would write.
func (s *Store) DiffText(p Plan) (string, error) {
	var b strings.Builder
	for _, a := range p.Actions {
		switch a.Do {
		case Mkdir:
			fmt.Fprintf(&b, "mkdir %s (mode %s)\n", a.Path, a.New.Mode)
			continue
		case Rmdir:
			fmt.Fprintf(&b, "rmdir %s\n", a.Path)
			continue
		case Chmod:
			fmt.Fprintf(&b, "chmod %s %s -> %s\n", a.Path, a.Old.Mode, a.New.Mode)
			continue
		}
		var before, after []byte
		var err error
		if a.Old.Kind == File || a.Old.Kind == Link {
			if before, err = s.Blob(a.Old.Hash); err != nil {
				return "", err
			}
		}
		if a.Do == Write {
			if after, err = s.Blob(a.New.Hash); err != nil {
				return "", err
			}
		}
		oldName, newName := "a"+a.Path, "b"+a.Path
		if a.Do == Remove || !exists(a.Old) {
			if a.Do == Remove {
				newName = "/dev/null"
			} else {
				oldName = "/dev/null"
			}
		}
		if a.Old.Kind == Link || a.New.Kind == Link {
			fmt.Fprintf(&b, "link %s: %q -> %q\n", a.Path, before, after)
			continue
		}
		if binary(before) || binary(after) {
			fmt.Fprintf(&b, "Binary files %s and %s differ\n", oldName, newName)
			continue
		}
		if exists(a.Old) && exists(a.New) && a.Old.Mode != a.New.Mode {
			fmt.Fprintf(&b, "mode %s %s -> %s\n", a.Path, a.Old.Mode, a.New.Mode)
		}
		b.WriteString(textdiff.Unified(oldName, newName, string(before), string(after)))
	}
	return b.String(), nil
}

// binary reports whether content looks binary (a NUL in its first 8 KiB).
func binary(b []byte) bool { return bytes.IndexByte(b[:min(len(b), 8<<10)], 0) >= 0 }

// ApplyOptions tune [Store.Apply].
type ApplyOptions struct {
	// Leave names paths the caller decided not to touch (conflicts).
	Leave func(path string) bool
	// Token goes into temporary file names, so the files a killed restore
	// left behind can be found (see [Store.Sweep]).
	Token string
	// Sync syncs each file before it is renamed into place.
	Sync bool
}

// Failure is an action that did not happen.
type Failure struct {
	Action
	Err error
}

// Applied is what a restore did.
type Applied struct {
	Done []Action
	// Left are actions not taken: the caller's conflicts, and paths found
	// changed since the plan was made.
	Left   []Failure
	Failed []Failure
}

// ErrChanged is the error of an action left alone because the path no
// longer holds what the plan expected.
var ErrChanged = errors.New("changed since the rewind was planned")

// ErrNotEmpty is the error of a directory kept because it holds files the
// checkpoint did not record.
var ErrNotEmpty = errors.New("kept: it holds files the checkpoint did not record")

var tempSeq atomic.Uint64

// Apply carries out a plan. Each file is written to a temporary file in
// its directory and renamed over the old one, so whatever happens to the
// process each path holds either its old content or its new one. Before
// touching a path it checks the path still holds what the plan's current
// checkpoint recorded; one that changed since is left alone (Left). Paths
// are resolved inside their root without following links out of it.
func (s *Store) Apply(ctx context.Context, p Plan, o ApplyOptions) (Applied, error) {
	var out Applied
	roots := map[string]*os.Root{}
	defer func() {
		for _, r := range roots {
			r.Close()
		}
	}()
	open := func(path string) (*os.Root, string, error) {
		base := "/"
		for _, r := range p.Roots {
			if within(r, path) && len(r) > len(base) {
				base = r
			}
		}
		r := roots[base]
		if r == nil {
			var err error
			if r, err = os.OpenRoot(base); err != nil {
				return nil, "", err
			}
			roots[base] = r
		}
		rel := relTo(path, base)
		if rel == "" {
			rel = "."
		}
		return r, rel, nil
	}
	// Order: files away, then directories away (deepest first), new
	// directories (shallowest first), content, and directory modes last
	// (a read-only directory would refuse what goes inside it).
	phase := func(a Action) int {
		switch {
		case a.Do == Remove:
			return 0
		case a.Do == Rmdir:
			return 1
		case a.Do == Mkdir:
			return 2
		case a.Do == Chmod && a.New.Kind == Dir:
			return 4
		}
		return 3
	}
	acts := slices.Clone(p.Actions)
	slices.SortStableFunc(acts, func(a, b Action) int {
		pa, pb := phase(a), phase(b)
		if pa != pb {
			return pa - pb
		}
		da, db := strings.Count(a.Path, "/"), strings.Count(b.Path, "/")
		if pa == 1 || pa == 4 {
			return db - da
		}
		return da - db
	})
	token := o.Token
	if token == "" {
		token = "x"
	}
	// Each directory made gets its recorded mode at the end, deepest
	// first, with the directory modes the plan changes.
	var modes []Action
	for _, a := range acts {
		if a.Do == Mkdir {
			modes = append(modes, Action{Change: a.Change, Do: Chmod})
		}
	}
	slices.SortStableFunc(modes, func(a, b Action) int { return strings.Count(b.Path, "/") - strings.Count(a.Path, "/") })
	made := map[string]bool{}
	for _, a := range acts {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		if o.Leave != nil && o.Leave(a.Path) {
			out.Left = append(out.Left, Failure{Action: a})
			continue
		}
		r, rel, err := open(a.Path)
		if err == nil {
			err = s.check(r, rel, a)
		}
		if err == nil {
			err = s.apply(r, rel, a, token, o.Sync)
		}
		switch {
		case err == nil:
			out.Done = append(out.Done, a)
			if a.Do == Mkdir {
				made[a.Path] = true
			}
		case errors.Is(err, ErrChanged):
			out.Left = append(out.Left, Failure{Action: a, Err: err})
		default:
			out.Failed = append(out.Failed, Failure{Action: a, Err: err})
		}
	}
	for _, a := range modes {
		if !made[a.Path] {
			continue
		}
		r, rel, err := open(a.Path)
		if err == nil {
			err = r.Chmod(rel, a.New.Mode)
		}
		if err != nil {
			out.Failed = append(out.Failed, Failure{Action: a, Err: err})
		}
	}
	return out, nil
}

// check verifies that rel still holds what a's Old records.
func (s *Store) check(r *os.Root, rel string, a Action) error {
	fi, err := r.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		// Nothing there: fine for a path to create, and for one to take
		// away (already gone, nothing lost).
		if !exists(a.Old) || a.Do == Remove || a.Do == Rmdir {
			return nil
		}
		return fmt.Errorf("%w (it is gone)", ErrChanged)
	}
	if err != nil {
		return err
	}
	if !exists(a.Old) {
		if a.Do == Mkdir && fi.IsDir() {
			return nil
		}
		return fmt.Errorf("%w (something was created there)", ErrChanged)
	}
	switch a.Old.Kind {
	case Dir:
		if !fi.IsDir() {
			return fmt.Errorf("%w (no longer a directory)", ErrChanged)
		}
	case Link:
		if fi.Mode()&fs.ModeSymlink == 0 {
			return fmt.Errorf("%w (no longer a link)", ErrChanged)
		}
		target, err := r.Readlink(rel)
		if err != nil {
			return err
		}
		if hashOf(typeBlob, []byte(target)) != a.Old.Hash {
			return fmt.Errorf("%w (the link points elsewhere)", ErrChanged)
		}
	case File:
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%w (no longer a regular file)", ErrChanged)
		}
		if fi.Size() != a.Old.Size {
			return fmt.Errorf("%w (its size changed)", ErrChanged)
		}
		data, err := r.ReadFile(rel)
		if err != nil {
			return err
		}
		if hashOf(typeBlob, data) != a.Old.Hash {
			return fmt.Errorf("%w (its content changed)", ErrChanged)
		}
	}
	return nil
}

func (s *Store) apply(r *os.Root, rel string, a Action, token string, sync bool) error {
	switch a.Do {
	case Remove:
		if err := r.Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	case Rmdir:
		if err := r.Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			if fi, serr := r.Lstat(rel); serr == nil && fi.IsDir() {
				return ErrNotEmpty
			}
			return err
		}
	case Mkdir:
		// Created private and writable; its recorded mode is set after
		// what goes inside it (see Apply).
		if err := r.Mkdir(rel, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	case Chmod:
		return r.Chmod(rel, a.New.Mode)
	case Write:
		data, err := s.Blob(a.New.Hash)
		if err != nil {
			return err
		}
		tmp := filepath.Join(filepath.Dir(rel), TempPrefix+token+"-"+strconv.FormatUint(tempSeq.Add(1), 36))
		if a.New.Kind == Link {
			if err := r.Symlink(string(data), tmp); err != nil {
				return err
			}
		} else if err := writeTemp(r, tmp, data, a.New.Mode, sync); err != nil {
			return err
		}
		if err := r.Rename(tmp, rel); err != nil {
			r.Remove(tmp)
			return err
		}
	}
	return nil
}

func writeTemp(r *os.Root, name string, data []byte, mode fs.FileMode, sync bool) error {
	f, err := r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		// The umask does not apply to chmod: the mode is exactly the
		// recorded one.
		err = f.Chmod(mode)
	}
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.Remove(name)
	}
	return err
}

// Sweep removes the temporary files a restore with token left in the
// directories of paths (a restore killed before its renames).
func Sweep(paths []string, token string) {
	prefix := TempPrefix + token + "-"
	seen := map[string]bool{}
	for _, p := range paths {
		dir := filepath.Dir(p)
		if seen[dir] {
			continue
		}
		seen[dir] = true
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), prefix) {
				os.Remove(filepath.Join(dir, e.Name()))
			}
		}
	}
}
