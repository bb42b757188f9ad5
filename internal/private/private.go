// Package private creates dsh's state so that only its owner can read it:
// every file under $DSH_HOME (session logs, the SQLite database and its WAL
// and SHM, snapshots, transcripts, checkpoints, logs, caches) is 0600 and
// every directory 0700, whatever the umask, and state found with wider modes
// is tightened, with a note saying so.
//
// Session logs hold everything the user and the model did: file contents,
// command output, sometimes secrets pasted into a prompt. A world-readable
// `sessions.db` in a 0755 `~/.dsh` hands all of that to every local user, so
// any capability that writes under $DSH_HOME creates its files and
// directories through this package rather than with os.OpenFile and
// os.MkdirAll directly.
package private

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// The modes of everything dsh creates under $DSH_HOME.
const (
	FileMode fs.FileMode = 0o600
	DirMode  fs.FileMode = 0o700
)

// openMask is what Tighten removes: every group and other permission bit.
const openMask fs.FileMode = 0o077

// Note reports a path whose mode was tightened (old to now), or that could
// not be (err).
type Note func(path string, old, now fs.FileMode, err error)

// MkdirAll creates dir and its missing parents with mode 0700 whatever the
// umask (a umask such as 0277 would otherwise leave a directory dsh cannot
// write into). Directories that already exist are left as they are; Home
// and Tighten deal with those.
func MkdirAll(dir string) error {
	st, err := os.Stat(dir)
	if err == nil {
		if !st.IsDir() {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := MkdirAll(parent); err != nil {
			return err
		}
	}
	return Mkdir(dir)
}

// Mkdir creates one directory with mode 0700 whatever the umask. An
// existing directory is not an error.
func Mkdir(dir string) error {
	if err := os.Mkdir(dir, DirMode); err != nil {
		if errors.Is(err, fs.ErrExist) {
			if st, serr := os.Stat(dir); serr == nil && st.IsDir() {
				return nil
			}
		}
		return err
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if st.Mode().Perm() != DirMode {
		return os.Chmod(dir, DirMode)
	}
	return nil
}

// OpenFile is os.OpenFile for state files: a file it creates is 0600
// whatever the umask, and an existing file it opens loses any group or
// other permission bits (the caller cannot tell a file this process created
// from one a wider-moded older version left behind, and both are private
// data).
func OpenFile(name string, flag int) (*os.File, error) {
	f, err := os.OpenFile(name, flag, FileMode)
	if err != nil {
		return nil, err
	}
	if err := fix(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// fix makes an open file 0600 when it is wider (anyone else may read it) or
// narrower than owner read-write (a umask took bits dsh needs). An owner
// execute bit, which only a user sets, is kept; a file of another user
// (which only root could change) is left as it is.
func fix(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	m := st.Mode().Perm()
	want := m&^openMask | FileMode
	if m == want {
		return nil
	}
	if err := f.Chmod(want); err != nil {
		if errors.Is(err, fs.ErrPermission) {
			// Another user's file: opening it is all dsh was asked to do.
			return nil
		}
		return fmt.Errorf("private: setting the mode of %s: %w", f.Name(), err)
	}
	return nil
}

// CreateTemp is os.CreateTemp with the file's mode exactly 0600.
func CreateTemp(dir, pattern string) (*os.File, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	if err := fix(f); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return f, nil
}

// WriteFile replaces name with data atomically (a temporary file in the
// same directory, synced, then renamed over it), mode 0600.
func WriteFile(name string, data []byte) error {
	tmp, err := CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*.tmp")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), name)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// Tighten removes the group and other permission bits of path (never
// following a symbolic link) and returns the mode it had; changed is false
// when there was nothing to remove or path does not exist.
func Tighten(path string) (old fs.FileMode, changed bool, err error) {
	st, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, false, nil
		}
		return 0, false, err
	}
	old = st.Mode().Perm()
	if st.Mode()&fs.ModeSymlink != 0 || old&openMask == 0 {
		return old, false, nil
	}
	if err := os.Chmod(path, old&^openMask); err != nil {
		return old, false, err
	}
	return old, true, nil
}

// TightenAll tightens each existing path, reporting every change (and every
// failure) to note, which may be nil.
func TightenAll(note Note, paths ...string) {
	for _, p := range paths {
		old, changed, err := Tighten(p)
		if (changed || err != nil) && note != nil {
			note(p, old, old&^openMask, err)
		}
	}
}

// Home makes the dsh home dir private: it is created (0700) when missing;
// otherwise it and every entry directly in it lose their group and other
// bits. Nothing deeper is visited, so this costs one directory read at
// start-up however many sessions there are: once the home is 0700 no other
// user can reach anything under it, and what dsh creates deeper is private
// on its own. Symbolic links are left alone. Changes and failures go to
// note (which may be nil); only a home that cannot be created is an error.
func Home(dir string, note Note) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return MkdirAll(dir)
	}
	TightenAll(note, dir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		if note != nil {
			note(dir, 0, 0, err)
		}
		return nil
	}
	for _, e := range entries {
		TightenAll(note, filepath.Join(dir, e.Name()))
	}
	return nil
}

// Describe is the one-line note of a tightened path, for stderr.
func Describe(path string, old, now fs.FileMode, err error) string {
	if err != nil {
		return fmt.Sprintf("cannot make %s private (mode %04o): %v", path, old, err)
	}
	return fmt.Sprintf("%s was readable by other users (mode %04o); tightened to %04o", path, old, now)
}
