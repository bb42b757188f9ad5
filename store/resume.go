package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/dshq/dsh/session"
)

// defaultSnapshotMin is [Options.SnapshotMin]'s default.
const defaultSnapshotMin = 1024

func (c *Coordinator) snapshotMin() int64 {
	switch {
	case c.opts.SnapshotMin < 0:
		return -1
	case c.opts.SnapshotMin == 0:
		return defaultSnapshotMin
	}
	return int64(c.opts.SnapshotMin)
}

func (c *Coordinator) warn(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if c.opts.Warn != nil {
		c.opts.Warn(msg)
		return
	}
	c.logf("%s", msg)
}

// snapshotDue reports whether the batch just stored (written) ends a turn
// of a log long enough to be worth a snapshot. A turn end is the moment:
// the derived state is whole (no turn half-told), and compaction, which
// runs inside a turn, is covered by the end of its turn. The id lock is
// held.
func (c *Coordinator) snapshotDue(s *session.Session, st *state, written []session.Event) bool {
	if _, ok := c.backend.(Snapshots); !ok {
		return false
	}
	limit := c.snapshotMin()
	if limit < 0 || st.cursor < limit || st.cursor <= st.snapped {
		return false
	}
	for i := len(written) - 1; i >= 0; i-- {
		if written[i].Type == session.TypeTurnEnd {
			return !s.Turns().Open
		}
	}
	return false
}

// snapshot stores a snapshot of s. A failure is logged, never returned: a
// snapshot only speeds up the next resume, and the flush that ran it
// stored the events. The id lock is held.
func (c *Coordinator) snapshot(ctx context.Context, s *session.Session, st *state) {
	sn, err := s.Snapshot(ctx)
	if err != nil {
		if !errors.Is(err, session.ErrTurnOpen) { // a turn began meanwhile: the next end takes one
			c.logf("store: taking a snapshot of %q: %v", st.meta.ID, err)
		}
		return
	}
	if sn.Covers() != st.cursor {
		// Events appended after this flush's read, before a turn
		// opened: the snapshot would cover what is not stored yet.
		return
	}
	data, err := sn.Encode()
	if err != nil {
		c.logf("store: encoding a snapshot of %q: %v", st.meta.ID, err)
		return
	}
	if err := c.backend.(Snapshots).PutSnapshot(ctx, st.meta.ID, StoredSnapshot{Covers: sn.Covers(), Summary: st.info.Summary, Data: data}); err != nil {
		c.logf("store: writing a snapshot of %q: %v", st.meta.ID, err)
		return
	}
	st.snapped = sn.Covers()
}

// Resume loads a stored session for resuming it and has build make the
// live session: from the newest snapshot and the events after it when the
// backend keeps snapshots ([Snapshots]) and the snapshot holds, else from
// a replay of the whole log, as [Coordinator.Load] reads it. A snapshot
// that is missing (on a log long enough to have one), torn, stale (it
// covers more than the log holds) or inconsistent (the log changed under
// it, or the events after it do not continue it) is reported through
// Options.Warn, and the whole log is replayed. The options build gets say
// the payloads were validated (the store parsed every event it read).
// Crash repair is the same as Load's.
func (c *Coordinator) Resume(ctx context.Context, id session.ID, build func(session.Options) (*session.Session, error)) (*session.Session, error) {
	if c.isClosed() {
		return nil, fmt.Errorf("store: %w", ErrClosed)
	}
	if err := checkID(id); err != nil {
		return nil, err
	}
	unlock, err := c.lockID(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := c.dropOwner(ctx, id); err != nil {
		return nil, err
	}
	why := "" // why the snapshot was not used, when the user should know
	if sb, ok := c.backend.(Snapshots); ok {
		s, reason, err := c.resumeSnapshot(ctx, sb, id, build)
		if s != nil || err != nil {
			return s, err
		}
		why = reason
	}
	h, events, err := c.loadCore(ctx, id)
	if err != nil {
		return nil, err
	}
	switch {
	case why != "":
		c.warn("session %s: %s; replayed all %d events", id, why, len(events))
	case int64(len(events)) >= c.snapshotMin() && c.snapshotMin() > 0:
		if _, ok := c.backend.(Snapshots); ok {
			c.warn("session %s has no snapshot; replayed all %d events (one is written at the next turn end)", id, len(events))
		} else {
			c.warn("session %s: the %s store keeps no snapshots; replayed all %d events", id, c.backend.Name(), len(events))
		}
	}
	return build(session.Options{Header: h, Seed: events, Validated: true})
}

// dropOwner stores what a disposed owner of id still had pending and
// forgets it, as a load does before reading. The id lock is held.
func (c *Coordinator) dropOwner(ctx context.Context, id session.ID) error {
	st := c.state(id)
	if st == nil || st.owner == nil {
		return nil
	}
	if c.sessions != nil {
		if live, ok := c.sessions.Get(id); ok && live == st.owner {
			return fmt.Errorf("store: cannot load %q: it is live in this process (%w)", id, ErrLive)
		}
	}
	if err := c.drainLocked(ctx, st.owner); err != nil {
		return err
	}
	c.mu.Lock()
	delete(c.bufs, st.owner)
	c.mu.Unlock()
	return nil
}

// resumeSnapshot is Resume from the newest snapshot. It returns the
// session, or the reason to replay instead ("" when there is no snapshot),
// or an error that replaying cannot mend. The id lock is held.
func (c *Coordinator) resumeSnapshot(ctx context.Context, sb Snapshots, id session.ID, build func(session.Options) (*session.Session, error)) (*session.Session, string, error) {
	if err := c.backend.Lock(ctx, id); err != nil {
		c.unlockIfUntracked(id)
		return nil, "", err
	}
	rec, stored, err := sb.LoadSnapshot(ctx, id)
	switch {
	case ctx.Err() != nil:
		c.unlockIfUntracked(id)
		return nil, "", ctx.Err()
	case err != nil && errors.Is(err, session.ErrSnapshot):
		return nil, fmt.Sprintf("its snapshot is unusable (%v)", err), nil
	case err != nil:
		return nil, fmt.Sprintf("its snapshot could not be read (%v)", err), nil
	case rec == nil:
		return nil, "", nil
	}
	if stored.Header.Version != session.FormatVersion {
		c.unlockIfUntracked(id)
		return nil, "", versionError(id, stored.Header.Version)
	}
	sn, err := session.DecodeSnapshot(rec.Data)
	if err != nil {
		return nil, fmt.Sprintf("its snapshot is torn or damaged (%v)", err), nil
	}
	covers := sn.Covers()
	if covers != rec.Covers || rec.Summary.Events != covers {
		return nil, fmt.Sprintf("its snapshot is inconsistent (it says it covers %d events, its record %d, its summary %d)", covers, rec.Covers, rec.Summary.Events), nil
	}
	if len(stored.Events) == 0 || stored.From != covers-1 || stored.Events[0].Seq != covers-1 {
		return nil, fmt.Sprintf("its snapshot is stale (it covers %d events, the log holds fewer)", covers), nil
	}
	if err := sn.CheckAnchor(stored.Events[0]); err != nil {
		return nil, fmt.Sprintf("its snapshot is inconsistent with the log (%v)", err), nil
	}
	tail := stored.Events[1:]
	closers, err := session.InterruptedClosers(openTurn(tail))
	if err != nil {
		c.unlockIfUntracked(id)
		return nil, "", fmt.Errorf("store: repairing %q: %w", id, err)
	}
	events := tail
	if len(closers) > 0 {
		events = append(tail[:len(tail):len(tail)], closers...)
	}
	info := Info{Header: stored.Header, Summary: rec.Summary.Add(events)}
	if stored.Torn != nil || len(closers) > 0 {
		if err := c.backend.CommitRepair(ctx, Repair{Header: stored.Header, Torn: stored.Torn, Closers: closers, Info: info}); err != nil {
			c.unlockIfUntracked(id)
			return nil, "", fmt.Errorf("store: repairing %q: %w", id, err)
		}
	}
	c.setState(id, &state{meta: stored.Header, cursor: covers + int64(len(events)), materialized: true,
		stored: events, base: covers, snapped: covers, info: info})
	s, err := build(session.Options{Header: stored.Header, Snapshot: sn, Seed: events, Validated: true})
	if errors.Is(err, session.ErrSnapshot) {
		c.setState(id, nil)
		return nil, fmt.Sprintf("its snapshot is inconsistent with the events after it (%v)", err), nil
	}
	if err != nil {
		c.setState(id, nil)
		c.unlockIfUntracked(id)
		return nil, "", err
	}
	return s, "", nil
}
