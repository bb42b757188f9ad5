package files

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Kind says what a tree entry is and how much of it a checkpoint holds.
type Kind byte

// The kinds. Only File, Link and Dir are restored; the others are recorded
// so a rewind can say what it leaves alone and whether it changed.
const (
	// File is a regular file whose content is a blob.
	File Kind = 'f'
	// Link is a symbolic link whose target is a blob.
	Link Kind = 'l'
	// Dir is a directory whose listing is a tree.
	Dir Kind = 'd'
	// Ignored is a file the ignore rules leave out: its size and time are
	// recorded, not its content.
	Ignored Kind = 'i'
	// IgnoredDir is a directory the ignore rules leave out: not entered.
	IgnoredDir Kind = 'I'
	// Oversize is a file over the size cap: its size and time are
	// recorded, not its content.
	Oversize Kind = 'o'
	// Special is a socket, pipe or device: left alone.
	Special Kind = 's'
	// Unscanned is a directory that could not be read or lay beyond the
	// file limit: its state is unknown, so nothing below it is touched.
	Unscanned Kind = 'u'
	// Absent is an extra file (see [Checkpoint.Extras]) that did not
	// exist: a rewind removes what was created there since.
	Absent Kind = '-'
)

// Tracked reports whether a checkpoint holds the entry's content.
func (k Kind) Tracked() bool { return k == File || k == Link || k == Dir }

// String names the kind for people.
func (k Kind) String() string {
	switch k {
	case File:
		return "file"
	case Link:
		return "symbolic link"
	case Dir:
		return "directory"
	case Ignored:
		return "ignored file"
	case IgnoredDir:
		return "ignored directory"
	case Oversize:
		return "file over the size cap"
	case Special:
		return "special file"
	case Unscanned:
		return "unscanned directory"
	case Absent:
		return "absent"
	}
	return "unknown"
}

// Entry is one name in a directory listing.
type Entry struct {
	Name string
	Kind Kind
	// Mode holds the permission bits (with setuid, setgid and sticky).
	Mode fs.FileMode
	// Hash is the content of a File or Link (a blob) or of a Dir (a tree).
	Hash Hash
	// Size is the length of a File, Link, Ignored or Oversize entry.
	Size int64
	// MTime is the modification time (Unix nanoseconds) of an Ignored or
	// Oversize entry, whose content is not recorded: it tells whether the
	// file changed.
	MTime int64
}

// Same reports whether two entries record the same state.
func (e Entry) Same(o Entry) bool {
	if e.Kind != o.Kind {
		return false
	}
	switch e.Kind {
	case File, Link, Dir:
		return e.Hash == o.Hash && (e.Kind == Link || e.Mode == o.Mode)
	case Ignored, Oversize:
		return e.Size == o.Size && e.MTime == o.MTime && e.Mode == o.Mode
	}
	return true
}

// encodeTree writes entries (sorted by name) in the tree object format: one
// record per entry, "<kind><mode octal> <hash|-> <size> <mtime>\t<name>\0".
// Names cannot hold a NUL, so no escaping is needed.
func encodeTree(ents []Entry) []byte {
	var b bytes.Buffer
	b.Grow(len(ents) * 96)
	for _, e := range ents {
		b.WriteByte(byte(e.Kind))
		b.WriteString(strconv.FormatUint(uint64(modeBits(e.Mode)), 8))
		b.WriteByte(' ')
		if e.Hash.IsZero() {
			b.WriteByte('-')
		} else {
			b.WriteString(e.Hash.String())
		}
		b.WriteByte(' ')
		b.WriteString(strconv.FormatInt(e.Size, 10))
		b.WriteByte(' ')
		b.WriteString(strconv.FormatInt(e.MTime, 10))
		b.WriteByte('\t')
		b.WriteString(e.Name)
		b.WriteByte(0)
	}
	return b.Bytes()
}

// modeBits maps a FileMode's permission, setuid, setgid and sticky bits to
// their Unix values.
func modeBits(m fs.FileMode) uint32 {
	v := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		v |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		v |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		v |= 0o1000
	}
	return v
}

// fileMode is the inverse of modeBits.
func fileMode(v uint32) fs.FileMode {
	m := fs.FileMode(v & 0o777)
	if v&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if v&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if v&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// decodeTree reads a tree object. With paths set, names are absolute
// clean paths (the extra files of a checkpoint); otherwise they are single
// path elements.
func decodeTree(data []byte, paths bool) ([]Entry, error) {
	var out []Entry
	for len(data) > 0 {
		i := bytes.IndexByte(data, 0)
		if i < 0 {
			return nil, fmt.Errorf("files: damaged tree: unterminated record")
		}
		rec := string(data[:i])
		data = data[i+1:]
		meta, name, ok := strings.Cut(rec, "\t")
		if !ok || len(meta) < 2 {
			return nil, fmt.Errorf("files: damaged tree record %q", rec)
		}
		f := strings.Split(meta[1:], " ")
		if len(f) != 4 {
			return nil, fmt.Errorf("files: damaged tree record %q", rec)
		}
		e := Entry{Name: name, Kind: Kind(meta[0])}
		switch e.Kind {
		case File, Link, Dir, Ignored, IgnoredDir, Oversize, Special, Unscanned:
		case Absent:
			if !paths {
				return nil, fmt.Errorf("files: damaged tree record %q: absent entry in a directory", rec)
			}
		default:
			return nil, fmt.Errorf("files: damaged tree record %q: unknown kind", rec)
		}
		mode, err := strconv.ParseUint(f[0], 8, 32)
		if err != nil {
			return nil, fmt.Errorf("files: damaged tree record %q: %v", rec, err)
		}
		e.Mode = fileMode(uint32(mode))
		if f[1] != "-" {
			if e.Hash, err = ParseHash(f[1]); err != nil {
				return nil, err
			}
		}
		if e.Size, err = strconv.ParseInt(f[2], 10, 64); err != nil {
			return nil, fmt.Errorf("files: damaged tree record %q: %v", rec, err)
		}
		if e.MTime, err = strconv.ParseInt(f[3], 10, 64); err != nil {
			return nil, fmt.Errorf("files: damaged tree record %q: %v", rec, err)
		}
		if e.Kind.Tracked() && e.Hash.IsZero() {
			return nil, fmt.Errorf("files: damaged tree record %q: no content", rec)
		}
		if !validName(name, paths) {
			return nil, fmt.Errorf("files: damaged tree: %q cannot name an entry", name)
		}
		if n := len(out); n > 0 && out[n-1].Name >= name {
			return nil, fmt.Errorf("files: damaged tree: entries out of order at %q", name)
		}
		out = append(out, e)
	}
	return out, nil
}

func validName(name string, path bool) bool {
	if path {
		return filepath.IsAbs(name) && filepath.Clean(name) == name && name != "/"
	}
	return name != "" && name != "." && name != ".." && !strings.ContainsRune(name, '/')
}

// Tree reads a directory listing.
func (s *Store) Tree(h Hash) ([]Entry, error) {
	data, err := s.get(typeTree, h)
	if err != nil {
		return nil, err
	}
	return decodeTree(data, false)
}

// extras reads the extra files of a checkpoint.
func (s *Store) extras(h Hash) ([]Entry, error) {
	if h.IsZero() {
		return nil, nil
	}
	data, err := s.get(typeTree, h)
	if err != nil {
		return nil, err
	}
	return decodeTree(data, true)
}

// CheckpointVersion is the format of [Checkpoint] objects.
const CheckpointVersion = 1

// Checkpoint is the recorded state of a workspace: a tree per root
// directory, plus extra files outside them (or ignored inside them) that
// the agent's file tools touched. It holds no time, so two checkpoints of
// the same state are the same object: when nothing changed, a checkpoint
// costs nothing.
type Checkpoint struct {
	Version int    `json:"version"`
	Roots   []Root `json:"roots"`
	// Extras are files named by absolute path, each recorded the way a
	// tree records its entries; zero when there are none.
	Extras Hash `json:"extras,omitzero"`
	// Limited is set when the scan stopped entering directories at the
	// file limit: those are Unscanned.
	Limited bool `json:"limited,omitempty"`
}

// Root is one directory of a checkpoint.
type Root struct {
	Path string `json:"path"`
	Tree Hash   `json:"tree"`
}

// Checkpoint reads a checkpoint by id.
func (s *Store) Checkpoint(id Hash) (Checkpoint, error) {
	data, err := s.get(typeCheckpoint, id)
	if err != nil {
		return Checkpoint{}, err
	}
	var c Checkpoint
	if err := json.Unmarshal(data, &c); err != nil {
		return Checkpoint{}, fmt.Errorf("files: damaged checkpoint %s: %w", id.Short(), err)
	}
	if c.Version != CheckpointVersion {
		return Checkpoint{}, fmt.Errorf("files: checkpoint %s has format version %d (this build reads %d)", id.Short(), c.Version, CheckpointVersion)
	}
	for _, r := range c.Roots {
		if !validName(r.Path, true) && r.Path != "/" {
			return Checkpoint{}, fmt.Errorf("files: damaged checkpoint %s: root %q", id.Short(), r.Path)
		}
	}
	return c, nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// sortEntries orders entries by name, as trees hold them.
func sortEntries(ents []Entry) {
	slices.SortFunc(ents, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
}

// ExtraEntries reads the extra files of a checkpoint (its Extras tree):
// entries named by absolute path.
func (s *Store) ExtraEntries(h Hash) ([]Entry, error) { return s.extras(h) }
