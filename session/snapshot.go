package session

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/dshq/dsh/llm"
)

// ErrSnapshot is wrapped by every error for a snapshot that cannot be used:
// torn (it fails its checksum), stale (it covers more than the log holds)
// or inconsistent (the log is not the one it was taken of, or the events
// after it do not continue it). Whoever resumes then replays the whole log.
var ErrSnapshot = errors.New("session: snapshot unusable")

// Snapshot is the derived state of a log's first Covers() events: what a
// resume would otherwise rebuild by folding every one of them. It holds the
// turn structure, the surface (each node by seq, with the message only when
// a rewritten call patched it) and, verbatim, the events the surface is
// made of plus those of the types capabilities asked to keep
// ([KeepOnResume]): a resumed session derives its history from those with
// the same code a replay uses, so the two cannot disagree on what a payload
// means. Streamed chunks, step markers and the rest stay in the store.
//
// Its validity check has three parts, each a reason to replay instead:
// the encoding carries a SHA-256 of its body (a torn or damaged snapshot);
// Covers must not pass the log's end (a stale one); and it names the digest
// of the last event it covers ([Digest]), which must be the stored event
// at that seq (a log changed under it), after which the events that follow
// must fold onto it (a replace of a node it does not have is an error).
type Snapshot struct {
	covers     int64
	anchor     string
	turns      TurnState
	turnStarts []int
	nodes      []snapNode
	kept       []Event
}

type snapNode struct {
	Seq      int64        `json:"seq"`
	Replaces bool         `json:"replaces,omitempty"`
	Msg      *llm.Message `json:"msg,omitempty"` // only when patched
}

// Covers is how many events (seqs 0 through Covers()-1) the snapshot
// stands for.
func (sn *Snapshot) Covers() int64 { return sn.covers }

// Kept is how many events the snapshot carries verbatim.
func (sn *Snapshot) Kept() int { return len(sn.kept) }

var keep = struct {
	sync.RWMutex
	types map[string]bool
}{types: map[string]bool{}}

// KeepOnResume asks that events of these types stay readable in memory
// after a resume from a snapshot: a capability that rebuilds its state by
// scanning the held log for its own events (session permission rules,
// the todo list, nested memory) calls it from an init function, and its
// scan then sees every such event however long the log is. Keep it to
// small, rare events: each is copied into every snapshot.
func KeepOnResume(types ...string) {
	keep.Lock()
	defer keep.Unlock()
	for _, t := range types {
		keep.types[t] = true
	}
}

func kept(typ string) bool {
	keep.RLock()
	defer keep.RUnlock()
	return keep.types[typ]
}

// ErrTurnOpen is returned by [Session.Snapshot] while a turn is open: a
// snapshot is taken between turns, so a resume never has to close a turn
// whose start it does not hold.
var ErrTurnOpen = errors.New("session: a turn is open")

// Snapshot takes a snapshot of the whole log as it is now. It reads back
// from the store the payloads of kept events that were released.
func (s *Session) Snapshot(ctx context.Context) (*Snapshot, error) {
	s.mu.Lock()
	if s.turns.Open {
		s.mu.Unlock()
		return nil, ErrTurnOpen
	}
	if s.n == 0 {
		s.mu.Unlock()
		return nil, errors.New("session: nothing to snapshot in an empty log")
	}
	if _, err := s.der.messages(s); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	sn := &Snapshot{covers: int64(s.n), turns: s.turns}
	for t := range s.turnStarts {
		sn.turnStarts = append(sn.turnStarts, t)
	}
	slices.Sort(sn.turnStarts)
	onSurface := make(map[int64]bool, len(s.der.nodes))
	sn.nodes = make([]snapNode, len(s.der.nodes))
	for i, n := range s.der.nodes {
		sn.nodes[i] = snapNode{Seq: n.seq, Replaces: n.replaces}
		if n.patched {
			m := n.msg.Clone()
			sn.nodes[i].Msg = &m
		}
		onSurface[n.seq] = true
	}
	want := func(e Event) bool { return onSurface[e.Seq] || kept(e.Type) }
	for _, e := range s.kept {
		if want(e) {
			sn.kept = append(sn.kept, e)
		}
	}
	for _, seg := range s.segs {
		for i := range seg.len() {
			if e := seg.at(i); want(e) {
				sn.kept = append(sn.kept, e)
			}
		}
	}
	var last Event
	if s.n > s.base {
		last = s.at(s.n - 1)
	}
	prev := s.snapAnchor
	s.mu.Unlock()
	// Released kept events (rule events and the like, off the surface)
	// come back in batched reads, not one read each.
	if err := s.fill(ctx, sn.kept); err != nil {
		return nil, fmt.Errorf("session: snapshot: %w", err)
	}
	for i, e := range sn.kept {
		full := e.Clone()
		full.msg, full.back = nil, nil
		sn.kept[i] = full
	}
	if last.Type == "" { // nothing since the snapshot this session resumed from
		sn.anchor = prev
	} else {
		if last.IsReleased() {
			var err error
			if last, err = s.Payload(ctx, last); err != nil {
				return nil, fmt.Errorf("session: snapshot: %w", err)
			}
		}
		sn.anchor = Digest(last)
	}
	return sn, nil
}

// Digest is a short fingerprint of an event as stored: its type, seq,
// time, payload text, surface op and sources. A snapshot names the digest
// of the last event it covers.
func Digest(e Event) string {
	h := sha256.New()
	b := make([]byte, 0, 64)
	b = append(b, e.Type...)
	b = append(b, 0)
	b = strconv.AppendInt(b, e.Seq, 10)
	b = append(b, 0)
	b = strconv.AppendInt(b, e.Time, 10)
	b = append(b, 0)
	h.Write(b)
	h.Write(e.Data)
	b = append(b[:0], 0)
	if e.SurfaceOp != nil {
		op, _ := e.SurfaceOp.MarshalJSON()
		b = append(b, op...)
	}
	for _, src := range e.SourceEventSeqs {
		b = append(b, ',')
		b = strconv.AppendInt(b, src, 10)
	}
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// CheckAnchor reports whether e, the stored event at seq Covers()-1, is the
// one the snapshot was taken after; the error wraps [ErrSnapshot].
func (sn *Snapshot) CheckAnchor(e Event) error {
	if e.Seq != sn.covers-1 {
		return fmt.Errorf("session: snapshot covers %d events but the log's event %d was offered as its last: %w", sn.covers, e.Seq, ErrSnapshot)
	}
	if d := Digest(e); d != sn.anchor {
		return fmt.Errorf("session: the log's event %d (%s) is not the one the snapshot was taken after (digest %s, snapshot has %s): the log changed under it: %w",
			e.Seq, e.Type, d, sn.anchor, ErrSnapshot)
	}
	return nil
}

// snapshotVersion is the format this build writes and reads.
const snapshotVersion = 1

type snapHead struct {
	Version int    `json:"dshSnapshot"`
	Covers  int64  `json:"covers"`
	Anchor  string `json:"anchor"`
	SHA256  string `json:"sha256"`
	Bytes   int    `json:"bytes"`
}

type snapBody struct {
	Turns      snapTurns  `json:"turns"`
	TurnStarts []int      `json:"turnStarts"`
	Nodes      []snapNode `json:"nodes"`
	Kept       []Event    `json:"kept"`
}

type snapTurns struct {
	Last int  `json:"last"`
	Open bool `json:"open"`
}

// Encode returns the snapshot's stored form: one JSON line naming the
// format, what it covers, the anchor digest and the SHA-256 and length of
// the body, then the body (JSON).
func (sn *Snapshot) Encode() ([]byte, error) {
	body, err := json.Marshal(snapBody{Turns: snapTurns(sn.turns), TurnStarts: sn.turnStarts, Nodes: sn.nodes, Kept: sn.kept})
	if err != nil {
		return nil, fmt.Errorf("session: encoding a snapshot: %w", err)
	}
	sum := sha256.Sum256(body)
	head, _ := json.Marshal(snapHead{Version: snapshotVersion, Covers: sn.covers, Anchor: sn.anchor, SHA256: hex.EncodeToString(sum[:]), Bytes: len(body)})
	out := make([]byte, 0, len(head)+1+len(body))
	out = append(out, head...)
	out = append(out, '\n')
	return append(out, body...), nil
}

// SnapshotCovers reads only the head of an encoded snapshot: how many
// events it covers. A store uses it to position its read of the log.
func SnapshotCovers(b []byte) (int64, error) {
	h, _, err := splitSnapshot(b)
	if err != nil {
		return 0, err
	}
	return h.Covers, nil
}

func splitSnapshot(b []byte) (snapHead, []byte, error) {
	var h snapHead
	nl := bytes.IndexByte(b, '\n')
	if nl < 0 {
		return h, nil, fmt.Errorf("session: snapshot has no head line (%d bytes): torn: %w", len(b), ErrSnapshot)
	}
	if err := json.Unmarshal(b[:nl], &h); err != nil {
		return h, nil, fmt.Errorf("session: snapshot head is not JSON: torn: %w", ErrSnapshot)
	}
	if h.Version != snapshotVersion {
		return h, nil, fmt.Errorf("session: snapshot format %d (this build reads %d): %w", h.Version, snapshotVersion, ErrSnapshot)
	}
	if h.Covers <= 0 {
		return h, nil, fmt.Errorf("session: snapshot covers %d events: %w", h.Covers, ErrSnapshot)
	}
	return h, b[nl+1:], nil
}

// DecodeSnapshot reads an encoded snapshot and checks its checksum and its
// shape; the error wraps [ErrSnapshot].
func DecodeSnapshot(b []byte) (*Snapshot, error) {
	h, body, err := splitSnapshot(b)
	if err != nil {
		return nil, err
	}
	if len(body) != h.Bytes {
		return nil, fmt.Errorf("session: snapshot body is %d bytes, its head says %d: torn: %w", len(body), h.Bytes, ErrSnapshot)
	}
	sum := sha256.Sum256(body)
	if hex.EncodeToString(sum[:]) != h.SHA256 {
		return nil, fmt.Errorf("session: snapshot body fails its SHA-256: torn or damaged: %w", ErrSnapshot)
	}
	var sb snapBody
	if err := json.Unmarshal(body, &sb); err != nil {
		return nil, fmt.Errorf("session: snapshot body: %v: %w", err, ErrSnapshot)
	}
	sn := &Snapshot{covers: h.Covers, anchor: h.Anchor, turns: TurnState(sb.Turns), turnStarts: sb.TurnStarts, nodes: sb.Nodes, kept: sb.Kept}
	if sn.turns.Open {
		return nil, fmt.Errorf("session: snapshot taken inside a turn: %w", ErrSnapshot)
	}
	for i, e := range sn.kept {
		if e.Seq < 0 || e.Seq >= sn.covers || (i > 0 && e.Seq <= sn.kept[i-1].Seq) {
			return nil, fmt.Errorf("session: snapshot keeps event %d out of order or past what it covers: %w", e.Seq, ErrSnapshot)
		}
		if e.Data == nil || (SurfaceEligible(e.Type) && e.SurfaceOp == nil) {
			return nil, fmt.Errorf("session: snapshot keeps event %d without its payload or surface op: %w", e.Seq, ErrSnapshot)
		}
	}
	return sn, nil
}

// restore installs sn as the state of the log's first sn.covers events;
// s is new and empty.
func (s *Session) restore(sn *Snapshot) error {
	s.base, s.n = int(sn.covers), int(sn.covers)
	s.snapAnchor = sn.anchor
	s.kept = make([]Event, len(sn.kept))
	for i, e := range sn.kept {
		s.kept[i] = e.Clone()
	}
	s.turns = sn.turns
	if len(sn.turnStarts) > 0 {
		s.turnStarts = make(map[int]bool, len(sn.turnStarts))
		for _, t := range sn.turnStarts {
			s.turnStarts[t] = true
		}
	}
	d := &s.der
	d.processed = s.base
	d.nodes = make([]node, 0, len(sn.nodes))
	seen := make(map[int64]bool, len(sn.nodes))
	for _, sn := range sn.nodes {
		e, ok := s.keptAt(sn.Seq)
		if !ok || !IsSurface(e) || seen[sn.Seq] {
			return fmt.Errorf("session: snapshot surface names event %d, which it does not keep as a surface event: %w", sn.Seq, ErrSnapshot)
		}
		seen[sn.Seq] = true
		msg, has, err := d.derive(e)
		if err != nil {
			return fmt.Errorf("session: snapshot: %w: %w", err, ErrSnapshot)
		}
		n := node{seq: e.Seq, typ: e.Type, msg: msg, has: has, replaces: sn.Replaces}
		if sn.Msg != nil {
			n.msg, n.has, n.patched = sn.Msg.Clone(), true, true
		}
		d.nodes = append(d.nodes, n)
	}
	d.dirty = true
	return nil
}
