package files

import (
	"strings"
)

// Change is one path whose recorded state differs between two checkpoints:
// Old in the first, New in the second. A Kind of 0 (or Absent) means the
// path did not exist there.
type Change struct {
	Path     string
	Old, New Entry
}

// exists reports whether e records something at its path.
func exists(e Entry) bool { return e.Kind != 0 && e.Kind != Absent }

// Op names the change for people: created, deleted, modified, mode (only
// the permissions changed) or type (a file became a directory, …).
func (c Change) Op() string {
	switch {
	case !exists(c.Old):
		return "created"
	case !exists(c.New):
		return "deleted"
	case c.Old.Kind != c.New.Kind:
		return "type"
	case (c.Old.Kind == File || c.Old.Kind == Dir) && c.Old.Hash == c.New.Hash:
		return "mode"
	}
	return "modified"
}

// Diff lists what changed from checkpoint from to checkpoint to, in path
// order. A directory created or deleted as a whole is listed with
// everything inside it. Only roots both checkpoints recorded are compared,
// and extra files only when both recorded them: what a checkpoint did not
// look at is not a change.
func (s *Store) Diff(from, to Hash) ([]Change, error) {
	if from == to {
		return nil, nil
	}
	a, err := s.Checkpoint(from)
	if err != nil {
		return nil, err
	}
	b, err := s.Checkpoint(to)
	if err != nil {
		return nil, err
	}
	var out []Change
	for _, rb := range b.Roots {
		for _, ra := range a.Roots {
			if ra.Path == rb.Path {
				if out, err = s.diffTrees(out, rb.Path, ra.Tree, rb.Tree); err != nil {
					return nil, err
				}
			}
		}
	}
	if a.Extras != b.Extras && !a.Extras.IsZero() && !b.Extras.IsZero() {
		ea, err := s.extras(a.Extras)
		if err != nil {
			return nil, err
		}
		eb, err := s.extras(b.Extras)
		if err != nil {
			return nil, err
		}
		if out, err = s.mergeEntries(out, "", ea, eb, true); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *Store) diffTrees(out []Change, dir string, a, b Hash) ([]Change, error) {
	if a == b {
		return out, nil
	}
	ea, err := s.Tree(a)
	if err != nil {
		return nil, err
	}
	eb, err := s.Tree(b)
	if err != nil {
		return nil, err
	}
	return s.mergeEntries(out, dir, ea, eb, false)
}

// mergeEntries compares two sorted listings of dir (with paths set the
// names are whole paths: extras).
func (s *Store) mergeEntries(out []Change, dir string, ea, eb []Entry, paths bool) ([]Change, error) {
	path := func(name string) string {
		if paths {
			return name
		}
		return joinPath(dir, name)
	}
	var err error
	i, j := 0, 0
	for i < len(ea) || j < len(eb) {
		var x, y Entry
		switch {
		case j >= len(eb) || i < len(ea) && ea[i].Name < eb[j].Name:
			x = ea[i]
			i++
		case i >= len(ea) || eb[j].Name < ea[i].Name:
			y = eb[j]
			j++
		default:
			x, y = ea[i], eb[j]
			i, j = i+1, j+1
		}
		if x.Same(y) {
			continue
		}
		p := path(x.Name + y.Name)
		if x.Name != "" && y.Name != "" {
			p = path(x.Name)
		}
		if x.Kind == Dir && y.Kind == Dir {
			if x.Mode != y.Mode {
				out = append(out, Change{Path: p, Old: x, New: y})
			}
			if out, err = s.diffTrees(out, p, x.Hash, y.Hash); err != nil {
				return nil, err
			}
			continue
		}
		out = append(out, Change{Path: p, Old: x, New: y})
		// A directory on one side only is listed with its content, when
		// the other side is nothing or a file (a kind the checkpoint
		// holds): then everything inside was created or deleted.
		if x.Kind == Dir && plain(y) {
			if out, err = s.expand(out, p, x.Hash, true); err != nil {
				return nil, err
			}
		}
		if y.Kind == Dir && plain(x) {
			if out, err = s.expand(out, p, y.Hash, false); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// plain reports whether e is nothing, or a file or link: a side against
// which a directory's whole content counts as changed.
func plain(e Entry) bool { return !exists(e) || e.Kind == File || e.Kind == Link }

// expand lists the content of tree h under dir as deleted (old) or created.
func (s *Store) expand(out []Change, dir string, h Hash, old bool) ([]Change, error) {
	ents, err := s.Tree(h)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		p := joinPath(dir, e.Name)
		c := Change{Path: p, New: e}
		if old {
			c = Change{Path: p, Old: e}
		}
		out = append(out, c)
		if e.Kind == Dir {
			if out, err = s.expand(out, p, e.Hash, old); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// Lookup returns the entry checkpoint id records at path (an absolute
// path under one of its roots, or one of its extras); ok is false when the
// checkpoint did not look at path, and the entry's Kind is 0 when it
// looked and found nothing.
func (s *Store) Lookup(id Hash, path string) (Entry, bool, error) {
	c, err := s.Checkpoint(id)
	if err != nil {
		return Entry{}, false, err
	}
	if !c.Extras.IsZero() {
		ex, err := s.extras(c.Extras)
		if err != nil {
			return Entry{}, false, err
		}
		for _, e := range ex {
			if e.Name == path {
				if e.Kind == Absent {
					e.Kind = 0
				}
				return e, true, nil
			}
		}
	}
	for _, r := range c.Roots {
		if path == r.Path || !within(r.Path, path) {
			continue
		}
		h := r.Tree
		parts := strings.Split(relTo(path, r.Path), "/")
		for i, name := range parts {
			ents, err := s.Tree(h)
			if err != nil {
				return Entry{}, false, err
			}
			var found *Entry
			for k := range ents {
				if ents[k].Name == name {
					found = &ents[k]
					break
				}
			}
			if found == nil {
				return Entry{Name: name}, true, nil
			}
			if i == len(parts)-1 {
				return *found, true, nil
			}
			if found.Kind != Dir {
				// A directory on the way was ignored, unscanned, or a file:
				// the checkpoint knows nothing below it.
				return Entry{}, found.Kind == File || found.Kind == Link, nil
			}
			h = found.Hash
		}
	}
	return Entry{}, false, nil
}
