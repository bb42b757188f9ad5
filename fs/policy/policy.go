package policy

import (
	"sync"

	"github.com/dshq/dsh/fs"
	"github.com/dshq/dsh/kernel"
)

// Tracker records which file versions each owner has seen. The zero value is
// ready to use; a Tracker must not be copied after first use.
type Tracker struct {
	mu    sync.Mutex
	seen  map[string]map[string]fs.Version // owner → Key → version
	bound map[string]bool                  // owners with a ForgetOnClose disposer
}

// New returns an empty tracker.
func New() *Tracker { return &Tracker{} }

// Observed records that owner has seen version v of target: after a read
// (the version the read started from) or a successful write or edit (the
// resulting version). It replaces any earlier record. The empty owner
// records nothing.
func (t *Tracker) Observed(owner string, target fs.Target, v fs.Version) {
	if owner == "" || v.IsZero() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seen == nil {
		t.seen = map[string]map[string]fs.Version{}
	}
	files := t.seen[owner]
	if files == nil {
		files = map[string]fs.Version{}
		t.seen[owner] = files
	}
	files[target.Key] = v
}

// Seen returns the version owner last recorded for target.
func (t *Tracker) Seen(owner string, target fs.Target) (fs.Version, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.seen[owner][target.Key]
	return v, ok
}

// Guard returns the precondition for owner changing target, to pass to
// [fs.Provider.Write] or [fs.Provider.Edit]. It checks against the record as
// it is now, when the call is made, not when the provider gets the lock: two
// concurrent changes based on one read cannot both pass, because the first
// changes the file's version and the second still expects the old one.
func (t *Tracker) Guard(owner string, target fs.Target) fs.Precondition {
	seen, ok := t.Seen(owner, target)
	return func(current *fs.Version) error { return check(owner, target, seen, ok, current) }
}

// CheckWrite reports whether owner may change target, whose current version
// is current (nil: the file does not exist), against the owner's latest
// record. It returns nil, a CodeNotObserved error or a CodeStale error.
func (t *Tracker) CheckWrite(owner string, target fs.Target, current *fs.Version) error {
	seen, ok := t.Seen(owner, target)
	return check(owner, target, seen, ok, current)
}

func check(owner string, target fs.Target, seen fs.Version, ok bool, current *fs.Version) error {
	switch {
	case current == nil:
		return nil
	case owner == "":
		return fs.Errorf(fs.CodeNotObserved, "policy", target.Path,
			"cannot change existing %q: only an agent that has read it may change it", target.Path)
	case !ok:
		return fs.Errorf(fs.CodeNotObserved, "policy", target.Path,
			"cannot change %q: it exists and you have not read it; read it first (any part will do), then retry", target.Path)
	case seen != *current:
		return fs.Errorf(fs.CodeStale, "policy", target.Path,
			"cannot change %q: it was modified since you last read it; read it again, then retry", target.Path)
	}
	return nil
}

// Forget drops every record of owner. Call it when the owner goes away.
func (t *Tracker) Forget(owner string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.seen, owner)
	delete(t.bound, owner)
}

// ForgetOnClose arranges for owner's records to be dropped when s closes
// (typically the agent's scope). Calling it again for the same owner does
// nothing until the owner has been forgotten; a nil scope is ignored.
func (t *Tracker) ForgetOnClose(owner string, s *kernel.Scope) {
	if owner == "" || s == nil {
		return
	}
	t.mu.Lock()
	if t.bound[owner] {
		t.mu.Unlock()
		return
	}
	if t.bound == nil {
		t.bound = map[string]bool{}
	}
	t.bound[owner] = true
	t.mu.Unlock()
	_ = s.Add(func() { t.Forget(owner) }) // a closed scope forgets at once
}

// Owners reports how many owners have records (for tests and diagnostics).
func (t *Tracker) Owners() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.seen)
}
