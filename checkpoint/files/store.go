package files

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/dshq/dsh/internal/private"
)

// Hash names an object: the SHA-256 of its type and content.
type Hash [32]byte

// String is the hash in hexadecimal.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// Short is the first twelve hexadecimal digits, for people.
func (h Hash) Short() string { return h.String()[:12] }

// IsZero reports whether h is the zero hash (no object).
func (h Hash) IsZero() bool { return h == Hash{} }

// MarshalText writes the hexadecimal form.
func (h Hash) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText reads the hexadecimal form.
func (h *Hash) UnmarshalText(b []byte) error {
	v, err := ParseHash(string(b))
	if err != nil {
		return err
	}
	*h = v
	return nil
}

// ParseHash reads a hash in hexadecimal.
func ParseHash(s string) (Hash, error) {
	var h Hash
	if len(s) != 2*len(h) {
		return h, fmt.Errorf("files: %q is not an object hash", s)
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return h, fmt.Errorf("files: %q is not an object hash", s)
	}
	return h, nil
}

// Object types, hashed in front of the content so that a blob and a tree
// with the same bytes are different objects.
const (
	typeBlob       = "blob"
	typeTree       = "tree"
	typeCheckpoint = "checkpoint"
)

func hashOf(typ string, data []byte) Hash {
	h := sha256.New()
	h.Write([]byte(typ))
	h.Write([]byte{0})
	h.Write(data)
	var out Hash
	h.Sum(out[:0])
	return out
}

// Store is a content-addressed object store on disk: file contents
// (blobs), directory listings (trees) and checkpoints, each written once
// under the hash of what it holds, so checkpoints share everything that did
// not change. It also keeps, per session, the list of checkpoints the
// session references: the roots [Store.Prune] keeps.
//
// Layout under dir (every file 0600, every directory 0700):
//
//	objects/ab/cdef…    one object, named by its hash
//	sessions/<id>       the checkpoints of one session, one hash a line
//	index/<key>         a scanner's stat cache for one set of roots
//
// Objects are written to a temporary file and renamed into place, so a
// crash never leaves a partial object under its final name. They are not
// synced one by one: a power loss may lose the newest checkpoint's objects
// (a rewind to it then says which object is missing), never a file of the
// workspace.
type Store struct {
	dir  string
	sync bool

	mu    sync.Mutex
	known map[Hash]bool // objects known to exist
	dirs  map[byte]bool // fan-out directories known to exist
	// last is, per session, the checkpoint this process last referenced
	// and the reference file's size just after: a step that changed no
	// file takes the same checkpoint again, and appending (and syncing)
	// it again was a file open, write and fsync per step for nothing. The
	// size check notices a file another process pruned or rewrote.
	last map[string]lastRef
}

// lastRef is what [Store.Reference] remembers of a session's last write.
type lastRef struct {
	h    Hash
	size int64
}

// maxLastRefs bounds [Store.last]: past it the memory starts over (a
// forgotten session's next reference is written again, which is harmless).
const maxLastRefs = 4096

// Open opens (creating it when missing) the store in dir. With sync set,
// session reference files are synced as they grow.
func Open(dir string, sync bool) (*Store, error) {
	for _, d := range []string{dir, filepath.Join(dir, "objects"), filepath.Join(dir, "sessions"), filepath.Join(dir, "index")} {
		if err := private.MkdirAll(d); err != nil {
			return nil, fmt.Errorf("files: creating the checkpoint store: %w", err)
		}
	}
	return &Store{dir: dir, sync: sync, known: map[Hash]bool{}, dirs: map[byte]bool{}, last: map[string]lastRef{}}, nil
}

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

func (s *Store) objectPath(h Hash) string {
	x := h.String()
	return filepath.Join(s.dir, "objects", x[:2], x[2:])
}

// MissingError is an object the store does not hold (a store pruned too
// eagerly, a power loss, a checkpoint of another machine).
type MissingError struct{ Hash Hash }

func (e *MissingError) Error() string {
	return fmt.Sprintf("files: checkpoint object %s is missing from the store", e.Hash.Short())
}

// has reports whether the object exists.
func (s *Store) has(h Hash) bool {
	s.mu.Lock()
	ok := s.known[h]
	s.mu.Unlock()
	if ok {
		return true
	}
	if _, err := os.Lstat(s.objectPath(h)); err == nil {
		s.mu.Lock()
		s.known[h] = true
		s.mu.Unlock()
		return true
	}
	return false
}

// put writes an object unless it exists and returns its hash and whether
// it was new.
func (s *Store) put(typ string, data []byte) (Hash, bool, error) {
	h := hashOf(typ, data)
	if s.has(h) {
		return h, false, nil
	}
	if err := s.write(h, data); err != nil {
		return h, false, err
	}
	s.mu.Lock()
	s.known[h] = true
	s.mu.Unlock()
	return h, true, nil
}

func (s *Store) write(h Hash, data []byte) error {
	path := s.objectPath(h)
	fan := h[0]
	s.mu.Lock()
	made := s.dirs[fan]
	s.mu.Unlock()
	if !made {
		if err := private.Mkdir(filepath.Dir(path)); err != nil {
			return fmt.Errorf("files: %w", err)
		}
		s.mu.Lock()
		s.dirs[fan] = true
		s.mu.Unlock()
	}
	tmp, err := private.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("files: writing object %s: %w", h.Short(), err)
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("files: writing object %s: %w", h.Short(), err)
	}
	return nil
}

// get reads an object and checks that its content still has its hash.
func (s *Store) get(typ string, h Hash) ([]byte, error) {
	data, err := os.ReadFile(s.objectPath(h))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &MissingError{Hash: h}
	}
	if err != nil {
		return nil, fmt.Errorf("files: reading object %s: %w", h.Short(), err)
	}
	if hashOf(typ, data) != h {
		return nil, fmt.Errorf("files: object %s is damaged (its content no longer matches its hash)", h.Short())
	}
	return data, nil
}

// Blob returns a file's content (or a symbolic link's target).
func (s *Store) Blob(h Hash) ([]byte, error) { return s.get(typeBlob, h) }

// PutBlob stores content and returns its hash.
func (s *Store) PutBlob(data []byte) (Hash, error) {
	h, _, err := s.put(typeBlob, data)
	return h, err
}

// sessionPath is the reference file of a session; ids are file names
// chosen by dsh, but nothing that could leave the directory is accepted.
func (s *Store) sessionPath(id string) (string, error) {
	if id == "" || strings.ContainsAny(id, `/\`) || id == "." || id == ".." || strings.ContainsRune(id, 0) {
		return "", fmt.Errorf("files: %q cannot name a session", id)
	}
	return filepath.Join(s.dir, "sessions", id), nil
}

// Reference records that session id uses checkpoint h, so [Store.Prune]
// keeps its objects while the session exists. Referencing again the
// checkpoint this process last recorded for id writes nothing while the
// reference file is as that write left it.
func (s *Store) Reference(id string, h Hash) error {
	path, err := s.sessionPath(id)
	if err != nil {
		return err
	}
	s.mu.Lock()
	prev, ok := s.last[id]
	s.mu.Unlock()
	if ok && prev.h == h {
		if st, err := os.Stat(path); err == nil && st.Size() == prev.size {
			return nil
		}
	}
	f, err := private.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND)
	if err != nil {
		return fmt.Errorf("files: recording checkpoint %s of session %s: %w", h.Short(), id, err)
	}
	_, err = f.WriteString(h.String() + "\n")
	if err == nil && s.sync {
		err = f.Sync()
	}
	var size int64 = -1
	if err == nil {
		if st, serr := f.Stat(); serr == nil {
			size = st.Size()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	s.mu.Lock()
	if err != nil || size < 0 {
		delete(s.last, id)
	} else {
		if len(s.last) >= maxLastRefs {
			clear(s.last)
		}
		s.last[id] = lastRef{h: h, size: size}
	}
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("files: recording checkpoint %s of session %s: %w", h.Short(), id, err)
	}
	return nil
}

// References lists the checkpoints session id recorded, oldest first.
func (s *Store) References(id string) ([]Hash, error) {
	path, err := s.sessionPath(id)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("files: %w", err)
	}
	var out []Hash
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if h, err := ParseHash(strings.TrimSpace(sc.Text())); err == nil {
			out = append(out, h)
		}
	}
	return out, nil
}

// Sessions lists the sessions that recorded checkpoints.
func (s *Store) Sessions() ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(s.dir, "sessions"))
	if err != nil {
		return nil, fmt.Errorf("files: %w", err)
	}
	var out []string
	for _, e := range ents {
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out, nil
}
