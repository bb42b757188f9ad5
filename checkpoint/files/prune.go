package files

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// pruneGrace protects objects younger than this from [Store.Prune]: a scan
// writes its objects before its session references the checkpoint, and
// another process may be between the two.
const pruneGrace = time.Hour

// Pruned is what [Store.Prune] removed.
type Pruned struct {
	Sessions int
	Objects  int
	Bytes    int64
}

// Prune removes the checkpoints of the sessions keep says are gone, then
// every object no remaining session's checkpoint reaches (older than an
// hour: a checkpoint being taken elsewhere is left alone).
func (s *Store) Prune(keep func(session string) bool, now time.Time) (Pruned, error) {
	var out Pruned
	ids, err := s.Sessions()
	if err != nil {
		return out, err
	}
	live := map[Hash]bool{}
	for _, id := range ids {
		if !keep(id) {
			path, _ := s.sessionPath(id)
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return out, fmt.Errorf("files: %w", err)
			}
			out.Sessions++
			continue
		}
		refs, err := s.References(id)
		if err != nil {
			return out, err
		}
		for _, h := range refs {
			if err := s.mark(live, h); err != nil {
				var miss *MissingError
				if errors.As(err, &miss) {
					continue // already gone: nothing to keep
				}
				return out, err
			}
		}
	}
	objects := filepath.Join(s.dir, "objects")
	fans, err := os.ReadDir(objects)
	if err != nil {
		return out, fmt.Errorf("files: %w", err)
	}
	for _, fan := range fans {
		if !fan.IsDir() || len(fan.Name()) != 2 {
			continue
		}
		dir := filepath.Join(objects, fan.Name())
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			h, err := ParseHash(fan.Name() + e.Name())
			if err != nil || live[h] {
				continue
			}
			fi, err := e.Info()
			if err != nil || now.Sub(fi.ModTime()) < pruneGrace {
				continue
			}
			if os.Remove(filepath.Join(dir, e.Name())) == nil {
				out.Objects++
				out.Bytes += fi.Size()
				s.mu.Lock()
				delete(s.known, h)
				s.mu.Unlock()
			}
		}
	}
	return out, nil
}

// mark adds checkpoint id and everything it reaches to live.
func (s *Store) mark(live map[Hash]bool, id Hash) error {
	if live[id] {
		return nil
	}
	c, err := s.Checkpoint(id)
	if err != nil {
		return err
	}
	live[id] = true
	for _, r := range c.Roots {
		if err := s.markTree(live, r.Tree); err != nil {
			return err
		}
	}
	if !c.Extras.IsZero() {
		ex, err := s.extras(c.Extras)
		if err != nil {
			return err
		}
		live[c.Extras] = true
		for _, e := range ex {
			if e.Kind == File || e.Kind == Link {
				live[e.Hash] = true
			}
		}
	}
	return nil
}

func (s *Store) markTree(live map[Hash]bool, h Hash) error {
	if live[h] {
		return nil
	}
	ents, err := s.Tree(h)
	if err != nil {
		return err
	}
	live[h] = true
	for _, e := range ents {
		switch e.Kind {
		case File, Link:
			live[e.Hash] = true
		case Dir:
			if err := s.markTree(live, e.Hash); err != nil {
				return err
			}
		}
	}
	return nil
}
