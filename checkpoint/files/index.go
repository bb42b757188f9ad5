package files

import (
	"bytes"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dshq/dsh/internal/private"
)

// The stat cache of a root survives the process in index/<key>, so the
// first scan after a restart stats files instead of reading them all. It
// is only a cache: a missing, damaged or foreign index is ignored (the
// scan reads everything), and an entry is trusted only while its stat
// matches, so an index written by another process is as good as our own.

const indexVersion = 1

type indexFile struct {
	Version int
	Root    string
	Dir     *indexDir
}

type indexDir struct {
	Tree Hash
	Ents []indexEnt
}

type indexEnt struct {
	Name         string
	Kind         Kind
	Mode         uint32
	Hash         Hash
	Size, MTime  int64
	CTime, FTime int64
	Ino, Dev     uint64
	Racy         bool
	Sub          *indexDir
}

func (s *Store) indexPath(root string) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(s.dir, "index", hex.EncodeToString(sum[:12]))
}

// load reads root's index unless this scanner already knows the root.
// Callers hold sc.mu.
func (sc *Scanner) load(root string) {
	if sc.roots[root] != nil || sc.loaded[root] {
		return
	}
	sc.loaded[root] = true
	data, err := os.ReadFile(sc.store.indexPath(root))
	if err != nil {
		return
	}
	var f indexFile
	if gob.NewDecoder(bytes.NewReader(data)).Decode(&f) != nil || f.Version != indexVersion || f.Root != root || f.Dir == nil {
		return
	}
	sc.roots[root] = fromIndex(f.Dir)
}

func fromIndex(d *indexDir) *dirState {
	st := &dirState{tree: d.Tree, ents: make([]ientry, len(d.Ents))}
	for i, e := range d.Ents {
		st.ents[i] = ientry{Entry: Entry{Name: e.Name, Kind: e.Kind, Mode: fileMode(e.Mode), Hash: e.Hash, Size: e.Size, MTime: e.MTime},
			ctime: e.CTime, mtime: e.FTime, ino: e.Ino, dev: e.Dev, racy: e.Racy}
		if e.Sub != nil {
			st.ents[i].sub = fromIndex(e.Sub)
		}
	}
	return st
}

func toIndex(st *dirState) *indexDir {
	d := &indexDir{Tree: st.tree, Ents: make([]indexEnt, len(st.ents))}
	for i, e := range st.ents {
		d.Ents[i] = indexEnt{Name: e.Name, Kind: e.Kind, Mode: modeBits(e.Mode), Hash: e.Hash, Size: e.Size, MTime: e.MTime,
			CTime: e.ctime, FTime: e.mtime, Ino: e.ino, Dev: e.dev, Racy: e.racy}
		if e.sub != nil {
			d.Ents[i].Sub = toIndex(e.sub)
		}
	}
	return d
}

// Save writes the stat cache of every root scanned, so the next process
// to scan them starts from it.
func (sc *Scanner) Save() error {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for root, st := range sc.roots {
		var b bytes.Buffer
		if err := gob.NewEncoder(&b).Encode(indexFile{Version: indexVersion, Root: root, Dir: toIndex(st)}); err != nil {
			return fmt.Errorf("files: encoding the index of %s: %w", root, err)
		}
		if err := private.WriteFile(sc.store.indexPath(root), b.Bytes()); err != nil {
			return fmt.Errorf("files: saving the index of %s: %w", root, err)
		}
	}
	return nil
}
