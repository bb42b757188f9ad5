package search

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Ignore file names, in precedence order: the first that has a verdict on a
// path decides (rg's order).
var ignoreFileNames = [...]string{".rgignore", ".ignore", ".gitignore"}

const gitignoreSlot = 2 // index of .gitignore in ignoreFileNames

// vcsDirs are never searched or listed, hidden files or not.
var vcsDirs = map[string]bool{".git": true, ".hg": true, ".svn": true, ".bzr": true, ".jj": true}

// dirNode is one directory on the path from the filesystem root to the entry
// being judged, with the ignore files it holds.
type dirNode struct {
	parent *dirNode
	abs    string // canonical absolute path
	files  [len(ignoreFileNames)]*ruleSet
	// hasGit marks a repository root: .gitignore files above it do not
	// apply below it.
	hasGit bool
	// anyRules is set when this directory or an ancestor has ignore rules,
	// so trees without any skip matching entirely.
	anyRules bool
}

func newDirNode(parent *dirNode, abs string) *dirNode {
	n := &dirNode{parent: parent, abs: abs}
	if parent != nil {
		n.anyRules = parent.anyRules
	}
	return n
}

func (n *dirNode) setFile(slot int, data []byte) {
	if s := parseIgnore(data); len(s.rules) > 0 {
		n.files[slot] = s
		n.anyRules = true
	}
}

// relTo returns abs relative to dir; abs must be inside dir.
func relTo(abs, dir string) string {
	if dir == "/" {
		return abs[1:]
	}
	return abs[len(dir)+1:]
}

// verdict walks from n up to the filesystem root. For each kind of ignore
// file the nearest file with an opinion decides, except that .gitignore
// files beyond the first repository root are not consulted. Between kinds,
// .rgignore beats .ignore beats .gitignore.
func (n *dirNode) verdict(abs string, isDir bool) verdict {
	if !n.anyRules {
		return noVerdict
	}
	var found [len(ignoreFileNames)]verdict
	sawGit := false
	for d := n; d != nil; d = d.parent {
		for slot, set := range d.files {
			if set == nil || found[slot] != noVerdict || (slot == gitignoreSlot && sawGit) {
				continue
			}
			found[slot] = set.match(relTo(abs, d.abs), isDir)
		}
		sawGit = sawGit || d.hasGit
	}
	for _, v := range found {
		if v != noVerdict {
			return v
		}
	}
	return noVerdict
}

// tree is one walk's view of the filesystem: the canonical root, the
// ignore files above it, and the filters every entry goes through.
type tree struct {
	root      string // canonical absolute path of the walk's root directory
	hidden    bool   // include names starting with "."
	overrides *overrides
	top       *dirNode // parent of the root's node (its ancestors' rules)
}

// newTree prepares a walk of dir, which must be a canonical absolute path to
// a directory. It reads the ignore files of every ancestor, as rg does,
// because a repository's top-level .gitignore governs its subdirectories
// too.
func newTree(dir string, hidden bool, ov *overrides) *tree {
	t := &tree{root: dir, hidden: hidden, overrides: ov}
	var chain []string
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		chain = append(chain, d)
		if d == filepath.Dir(d) {
			break
		}
	}
	if dir == filepath.Dir(dir) {
		chain = nil // the root is "/": no ancestors
	}
	var node *dirNode
	for i := len(chain) - 1; i >= 0; i-- {
		node = newDirNode(node, chain[i])
		for slot, name := range ignoreFileNames {
			if data, err := os.ReadFile(filepath.Join(chain[i], name)); err == nil {
				node.setFile(slot, data)
			}
		}
		if _, err := os.Stat(filepath.Join(chain[i], ".git")); err == nil {
			node.hasGit = true
		}
	}
	t.top = node
	return t
}

// child is an entry that passed the filters.
type child struct {
	name string
	rel  string // slash-separated, relative to the tree root
	abs  string
	typ  fs.FileMode // type bits only (fs.DirEntry.Type)
}

// readDir lists the directory abs (rel from the root; "" for the root
// itself) whose parent node is parent, reads its ignore files, and returns
// its node and the children that are visible. Unreadable directories yield
// no children, as with rg --no-messages.
func (t *tree) readDir(parent *dirNode, abs, rel string) (*dirNode, []child) {
	node := newDirNode(parent, abs)
	f, err := os.Open(abs)
	if err != nil {
		return node, nil
	}
	ents, _ := f.ReadDir(-1)
	f.Close()
	for _, e := range ents {
		name := e.Name()
		if name == ".git" {
			node.hasGit = true
		}
		for slot, ign := range ignoreFileNames {
			if name == ign {
				if data, err := os.ReadFile(filepath.Join(abs, name)); err == nil {
					node.setFile(slot, data)
				}
			}
		}
	}
	kids := make([]child, 0, len(ents))
	for _, e := range ents {
		name := e.Name()
		if vcsDirs[name] {
			continue
		}
		c := child{name: name, abs: joinAbs(abs, name), typ: e.Type()}
		if rel == "" {
			c.rel = name
		} else {
			c.rel = rel + "/" + name
		}
		if t.visible(node, c) {
			kids = append(kids, c)
		}
	}
	return node, kids
}

func joinAbs(dir, name string) string {
	if strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}

// visible applies rg's precedence: include/exclude globs, then ignore
// files, then the hidden-name rule. A glob or negated ignore rule that
// explicitly allows an entry lets a hidden one through.
func (t *tree) visible(node *dirNode, c child) bool {
	isDir := c.typ.IsDir()
	switch t.overrides.match(c.rel, isDir) {
	case ignored:
		return false
	case allowed:
		return true
	}
	switch node.verdict(c.abs, isDir) {
	case ignored:
		return false
	case allowed:
		return true
	}
	return t.hidden || c.name[0] != '.'
}

// walk visits every visible entry below the root depth-first, calling fn
// for each non-directory entry and descending into a directory only when
// enter (if not nil) allows it. Symbolic links are reported, never
// followed. It stops early when ctx is done or fn returns false.
func (t *tree) walk(ctx context.Context, enter, fn func(c child) bool) error {
	var visit func(parent *dirNode, abs, rel string) bool
	visit = func(parent *dirNode, abs, rel string) bool {
		if ctx.Err() != nil {
			return false
		}
		node, kids := t.readDir(parent, abs, rel)
		for _, c := range kids {
			if c.typ.IsDir() {
				if (enter == nil || enter(c)) && !visit(node, c.abs, c.rel) {
					return false
				}
				continue
			}
			if !fn(c) {
				return false
			}
		}
		return true
	}
	visit(t.top, t.root, "")
	return ctx.Err()
}

// resolveRoot makes root absolute and canonical (symbolic links resolved),
// which is how rg locates the ignore files above it, and stats it.
func resolveRoot(root string) (canonical string, info fs.FileInfo, err error) {
	if root == "" {
		return "", nil, errorf("no path given")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", nil, errorf("resolving %s: %w", root, err)
	}
	canonical, err = filepath.EvalSymlinks(abs)
	if err != nil {
		return "", nil, errorf("%s: %w", root, notExistOr(err))
	}
	info, err = os.Stat(canonical)
	if err != nil {
		return "", nil, errorf("%s: %w", root, notExistOr(err))
	}
	return canonical, info, nil
}

// notExistOr trims the operation and path from a *fs.PathError, which the
// caller already names.
func notExistOr(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}
