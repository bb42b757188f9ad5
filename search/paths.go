package search

import (
	"context"
	"path/filepath"
)

// Paths visits the files and directories under root that a search would
// look at (ignore files and the hidden rule apply as for [Searcher.Grep]),
// depth-first, each directory before what it holds, with its
// slash-separated root-relative path. Unlike [Searcher.Glob] it stats
// nothing, so listing a large tree costs one directory read per directory:
// it is what completion of @-mentions indexes. It stops early when ctx is
// done or fn returns false.
func (s *Searcher) Paths(ctx context.Context, root string, hidden bool, fn func(rel string, dir bool) bool) error {
	canon, info, err := resolveRoot(root)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return errorf("%s is not a directory", root)
	}
	stopped := false
	t := newTree(filepath.Clean(canon), hidden, nil)
	err = t.walk(ctx, func(c child) bool {
		if stopped || !fn(c.rel, true) {
			stopped = true
			return false
		}
		return true
	}, func(c child) bool {
		if stopped || !fn(c.rel, false) {
			stopped = true
			return false
		}
		return true
	})
	return err
}
