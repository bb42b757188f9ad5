package session

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/dshq/dsh/internal/ownership"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
)

// Notifier receives every appended event; the [Live] installs one that
// emits its Appended signal.
type Notifier func(ctx context.Context, s *Session, e Event) error

// Session is one live log. It is safe for concurrent use.
//
// Append pushes an event and then notifies listeners, in seq order, without
// holding the lock (listeners may append again). When an append happens
// while another goroutine, or an outer append on this one, is delivering
// notifications, the event is queued and delivered by that deliverer right
// after the event it is delivering; Append then returns at once. Listeners
// therefore always see events in seq order, and appending from a listener
// never deadlocks.
type Session struct {
	id     ID
	header Header
	clock  func() time.Time
	redact Redactor

	mu sync.Mutex
	// segs holds the log in fixed-size segments (see segmentSize): every
	// segment but the last is full, and a segment's backing array is never
	// reallocated, so views handed out stay valid while the log grows and
	// no append ever copies the log. n is the number of events.
	segs []segment
	n    int
	// base is the seq of the first event segs holds. It is 0 unless the
	// session was resumed from a snapshot: then the events before it are
	// read through reader, except kept, the few the snapshot carries.
	base int
	// kept are events before base that the snapshot carried (the surface
	// and the types of [KeepOnResume]), in seq order, with their payload.
	kept []Event
	// snapAnchor is the anchor digest of the snapshot the session resumed
	// from ("" when none).
	snapAnchor string
	// released counts the leading segments whose payloads were dropped
	// from memory (see Release); reader reads them back.
	released int
	reader   Reader
	// turnStarts holds the turn number of every turn/start, so
	// HasTurnStart needs no payload.
	turnStarts map[int]bool
	queue      []Event
	delivering bool
	notify     Notifier
	der        deriver
	turns      TurnState
	// turnsChanged is closed at the next change of turns (see WatchTurns);
	// nil while nobody waits.
	turnsChanged chan struct{}
	// grown is closed at the next append (see WhenLonger); nil while
	// nobody waits.
	grown chan struct{}
}

// closedChan is returned to waiters whose condition already holds.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// TurnState is the turn structure of the log: the newest turn number and
// whether that turn is still open. It is maintained at push time, so reading
// it costs nothing.
type TurnState struct {
	Last int
	Open bool
}

// ErrCondition is returned by [Session.AppendIf] when its condition does not
// hold; nothing was appended.
var ErrCondition = errors.New("session: append condition not met")

// Options configure a new session.
type Options struct {
	Header Header
	// Seed is a log prefix the session starts with (resume, fork, replay):
	// contiguous from seq 0, validated, deep-copied, and not announced as
	// appends.
	Seed []Event
	// Validated says the seed's payloads were already checked to be JSON
	// (a store validates every event it reads), so New does not parse
	// them a second time.
	Validated bool
	// Snapshot, when set, is the derived state of the log's first
	// Snapshot.Covers() events (see [Snapshot]); Seed then holds the
	// events after them, from that seq on, and the session holds only
	// those and what the snapshot kept. A seed that does not continue the
	// snapshot is an error wrapping [ErrSnapshot].
	Snapshot *Snapshot
	Clock    func() time.Time
	// Redact, when set, removes secrets from every event before it is
	// appended (see [Redactor]); [Live] sets its own on the sessions it
	// prepares. The seed is taken as it is.
	Redact Redactor
}

// Redactor removes secrets from an event's payload. JSON returns the
// payload with every secret it knows replaced (a valid JSON text of the
// same shape) and whether anything was; it returns data itself when
// nothing was. *redact.Set is the implementation dsh installs: the values
// the process knows to be secret (its environment's credentials, the
// configured keys and database URLs).
//
// It is applied to every append, whatever appends it (the loop's tool
// results, MCP results, hook context, the front doors' user messages and
// shell-mode output, a plugin's own events): what the log holds is what
// every reader of the log gets — the model's next request, the stores,
// live listeners, the API and the web UI, traces.
type Redactor interface {
	JSON(data []byte) ([]byte, bool)
}

// New returns a session. The header's ID wins over id when set.
func New(id ID, opts Options) (*Session, error) {
	h := opts.Header
	if h.ID == "" {
		h.ID = id
	}
	clock := opts.Clock
	if clock == nil {
		clock = time.Now
	}
	if h.CreatedAt == 0 {
		h.CreatedAt = clock().UnixMilli()
	}
	if h.Version != FormatVersion {
		return nil, fmt.Errorf("session: unsupported format version %d (only %d)", h.Version, FormatVersion)
	}
	s := &Session{id: h.ID, header: h, clock: clock, redact: opts.Redact}
	if opts.Snapshot != nil {
		if err := s.restore(opts.Snapshot); err != nil {
			return nil, err
		}
	}
	for i, e := range opts.Seed {
		if want := int64(s.base + i); e.Seq != want {
			if opts.Snapshot != nil {
				return nil, fmt.Errorf("session: seed event at index %d has seq %d (expected %d after the snapshot): %w", i, e.Seq, want, ErrSnapshot)
			}
			return nil, fmt.Errorf("session: seed event at index %d has seq %d (expected %d); seed must be contiguous from 0", i, e.Seq, i)
		}
		if e.IsReleased() {
			return nil, fmt.Errorf("session: seed event %q (seq %d) has no payload (a released event cannot seed a session)", e.Type, e.Seq)
		}
		if !opts.Validated && !json.Valid(e.Data) {
			return nil, fmt.Errorf("session: seed event %q (seq %d) carries non-JSON data", e.Type, e.Seq)
		}
		if SurfaceEligible(e.Type) && e.SurfaceOp == nil {
			return nil, fmt.Errorf("session: seed event %q (seq %d) is surface-eligible but carries no surfaceOp marker", e.Type, e.Seq)
		}
		e = e.Clone()
		e.back = nil
		s.push(e)
		s.noteTurn(e)
	}
	if opts.Snapshot != nil {
		// Fold the events after the snapshot now: one that does not fit
		// it (a replace of a node it does not have) means the snapshot
		// does not describe this log, and the caller replays instead.
		if _, err := s.der.messages(s); err != nil {
			return nil, fmt.Errorf("session: the events after the snapshot do not continue it: %w: %w", err, ErrSnapshot)
		}
	}
	return s, nil
}

// segmentSize is how many events one segment of the log holds. Payloads
// are released a segment at a time, so it also bounds how much of the
// flushed log stays in memory beyond the newest segment.
const segmentSize = 256

// push adds e at the end of the log; callers hold s.mu (or own s).
func (s *Session) push(e Event) {
	if (s.n-s.base)%segmentSize == 0 {
		s.segs = append(s.segs, segment{ev: make([]Event, 0, segmentSize)})
	}
	last := len(s.segs) - 1
	s.segs[last].ev = append(s.segs[last].ev, e)
	s.n++
}

// at returns the event at seq as held in memory (a released event has no
// payload); callers hold s.mu and check the bounds (base <= seq < n).
func (s *Session) at(seq int) Event { return segAt(s.segs, s.base, seq) }

// segAt returns the event at seq of segments whose first event is base.
func segAt(segs []segment, base, seq int) Event {
	i := seq - base
	return segs[i/segmentSize].at(i % segmentSize)
}

// keptAt returns the kept event at seq (seq < base); callers hold s.mu.
func (s *Session) keptAt(seq int64) (Event, bool) {
	i, ok := slices.BinarySearchFunc(s.kept, seq, func(e Event, seq int64) int { return cmp.Compare(e.Seq, seq) })
	if !ok {
		return Event{}, false
	}
	return s.kept[i], true
}

// keptFrom returns the kept events from seq from on; callers hold s.mu.
func (s *Session) keptFrom(from int64) []Event {
	i, _ := slices.BinarySearchFunc(s.kept, from, func(e Event, seq int64) int { return cmp.Compare(e.Seq, seq) })
	return s.kept[i:]
}

// Base is the seq of the first event the session holds in full sequence:
// 0, unless it was resumed from a snapshot. The held views (Events, Since,
// Scan, Backward, Event, Last) see of the events before it only those the
// snapshot kept (the surface and the types of [KeepOnResume]); Range,
// Payload and Log read every one from the store.
func (s *Session) Base() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int64(s.base)
}

// ID returns the session id.
func (s *Session) ID() ID { return s.id }

// Header returns the session's header.
func (s *Session) Header() Header { return s.header }

// Cwd is the working directory recorded in the header.
func (s *Session) Cwd() string { return s.header.Cwd }

// Len is the number of events (the next seq).
func (s *Session) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// Events returns a copy of the log so far, as held in memory: the events of
// released segments (see [Session.Release]) come without their payload
// (Data is nil; [Decode] and [Session.Payload] read it back from the
// store). It costs O(log); code that runs every step or follows the log
// reads [Session.Since], [Session.Backward] or [Session.Range] instead.
func (s *Session) Events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Event, 0, len(s.kept)+s.n-s.base)
	out = append(out, s.kept...)
	for _, seg := range s.segs {
		out = seg.appendFrom(out, 0)
	}
	return out
}

// Since returns the events from seq from on, as held in memory (see
// [Session.Events] on released payloads). Following a log with it costs
// only what is new.
func (s *Session) Since(from int64) []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	if from < 0 {
		from = 0
	}
	if from >= int64(s.n) {
		return nil
	}
	var out []Event
	if from < int64(s.base) {
		kept := s.keptFrom(from)
		out = append(make([]Event, 0, len(kept)+s.n-s.base), kept...)
		from = int64(s.base)
	} else {
		out = make([]Event, 0, int64(s.n)-from)
	}
	for i := int(from) - s.base; i < s.n-s.base; {
		seg, j := s.segs[i/segmentSize], i%segmentSize
		out = seg.appendFrom(out, j)
		i += seg.len() - j
	}
	return out
}

// Backward calls fn with the events before seq before, newest first, as
// held in memory, until fn returns false. It holds no lock while fn runs.
func (s *Session) Backward(before int64, fn func(Event) bool) {
	s.mu.Lock()
	if before > int64(s.n) {
		before = int64(s.n)
	}
	segs := append([]segment(nil), s.segs...)
	base, kept := s.base, s.kept
	s.mu.Unlock()
	for i := int(before) - 1; i >= base; i-- {
		if !fn(segAt(segs, base, i)) {
			return
		}
	}
	for i := len(kept) - 1; i >= 0; i-- {
		if kept[i].Seq < before && !fn(kept[i]) {
			return
		}
	}
}

// Scan iterates over the events from seq from on, oldest first, as held in
// memory (see [Session.Events] on released payloads), up to the length at
// the call. It holds no lock while the loop body runs and copies no events,
// so a scan of a long log costs no allocation of its size.
func (s *Session) Scan(from int64) iter.Seq[Event] {
	s.mu.Lock()
	n := int64(s.n)
	segs := append([]segment(nil), s.segs...)
	base := s.base
	kept := s.keptFrom(from)
	s.mu.Unlock()
	return func(yield func(Event) bool) {
		for _, e := range kept {
			if !yield(e) {
				return
			}
		}
		for i := max(from, int64(base)); i < n; i++ {
			if !yield(segAt(segs, base, int(i))) {
				return
			}
		}
	}
}

// Event returns the event at seq, as held in memory (see [Session.Events]);
// before [Session.Base], only a kept one ([Session.Payload] reads any).
func (s *Session) Event(seq int64) (Event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if seq < 0 || seq >= int64(s.n) {
		return Event{}, false
	}
	if seq < int64(s.base) {
		return s.keptAt(seq)
	}
	return s.at(int(seq)), true
}

// Last returns the newest event of type typ, scanning backwards, as held in
// memory (see [Session.Events]).
func (s *Session) Last(typ string) (Event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := s.n - 1; i >= s.base; i-- {
		if e := s.at(i); e.Type == typ {
			return e, true
		}
	}
	for i := len(s.kept) - 1; i >= 0; i-- {
		if s.kept[i].Type == typ {
			return s.kept[i], true
		}
	}
	return Event{}, false
}

// SetNotifier installs the append notifier (the store does this).
func (s *Session) SetNotifier(n Notifier) {
	s.mu.Lock()
	s.notify = n
	s.mu.Unlock()
}

// ErrOwned is wrapped by the error for an append of an event type that
// belongs to a capability (the loop's turn/*, step/*, user/*, assistant/*,
// tool/*, …; compaction's compact/*; see [Writer]). Nothing was appended.
var ErrOwned = errors.New("event type is owned by a capability")

// guard refuses typ unless it is unowned or tok may write its namespace.
func guard(tok *ownership.Token, typ string) error {
	ns, owned := ownership.Of(typ)
	if !owned || tok.May(ns) {
		return nil
	}
	return fmt.Errorf("session: refusing to append %q: %s/* events belong to %s, which alone records them: %w",
		typ, ns, ownership.Owner(ns).Name(), ErrOwned)
}

// Append records a non-surface event of a type no capability owns (a
// plugin's or tool's own, such as todo/write). Owned types (turn/end,
// tool/result, compact/start, …) are refused with [ErrOwned]: only their
// owner records them, through a [Writer].
func (s *Session) Append(ctx context.Context, typ string, data any) (Event, error) {
	return s.Writer(nil).Append(ctx, typ, data)
}

// AppendIf appends like Append, but only if cond holds for the turn state
// at the instant of the push; otherwise it returns [ErrCondition]. Plugins
// use it to record their events only inside an open turn.
func (s *Session) AppendIf(ctx context.Context, cond func(TurnState) bool, typ string, data any) (Event, error) {
	return s.Writer(nil).AppendIf(ctx, cond, typ, data, nil)
}

// Writer appends events on behalf of the holder of a capability token:
// the types its token may write, and every type nobody owns. The loop,
// compaction, the subagent service, the hooks bridge and the permission
// checker each hold one; their tokens live in an internal package, so code
// outside this module cannot make a Writer that writes owned types (a nil
// token writes only unowned ones, like [Session.Append]).
type Writer struct {
	s   *Session
	tok *ownership.Token
}

// Writer returns a writer for tok.
func (s *Session) Writer(tok *ownership.Token) Writer { return Writer{s: s, tok: tok} }

// Append records a non-surface event.
func (w Writer) Append(ctx context.Context, typ string, data any) (Event, error) {
	if err := guard(w.tok, typ); err != nil {
		return Event{}, err
	}
	if SurfaceEligible(typ) {
		return Event{}, fmt.Errorf("session: event %q is surface-eligible and requires a surfaceOp marker", typ)
	}
	return w.s.append(ctx, typ, data, nil, nil)
}

// AppendChunk records one streamed chunk (assistant/chunk). It is the
// hottest append of all, so it encodes without reflection or boxing.
func (w Writer) AppendChunk(ctx context.Context, turn, step int, c llm.Chunk) (Event, error) {
	if !w.tok.May(ownership.Assistant) {
		return Event{}, guard(w.tok, TypeAssistantChunk)
	}
	p := AssistantChunk{Turn: turn, Step: step, Chunk: c}
	return w.s.appendRaw(ctx, nil, TypeAssistantChunk, p.AppendJSON(make([]byte, 0, 96+len(c.Text)+len(c.ArgsDelta))), nil, nil, nil)
}

// AppendSurface records a surface event with its op and provenance.
func (w Writer) AppendSurface(ctx context.Context, typ string, data any, op SurfaceOp, sources []int64) (Event, error) {
	if err := guard(w.tok, typ); err != nil {
		return Event{}, err
	}
	if !SurfaceEligible(typ) {
		return Event{}, fmt.Errorf("session: event %q is not surface-eligible", typ)
	}
	if sources != nil && len(sources) == 0 {
		sources = nil
	}
	return w.s.append(ctx, typ, data, &op, sources)
}

// AppendIf appends like Append or AppendSurface (op nil: non-surface), but
// only if cond holds for the turn state at the instant of the push. Agents
// use it so that two goroutines can never both open a turn, and context is
// never recorded after the turn it was meant for has closed.
func (w Writer) AppendIf(ctx context.Context, cond func(TurnState) bool, typ string, data any, op *SurfaceOp) (Event, error) {
	if err := guard(w.tok, typ); err != nil {
		return Event{}, err
	}
	if (op != nil) != SurfaceEligible(typ) {
		return Event{}, fmt.Errorf("session: event %q: surfaceOp is required exactly for surface-eligible types", typ)
	}
	return w.s.appendCond(ctx, cond, typ, data, op, nil)
}

// encode turns a payload into JSON text, refusing values that are not JSON
// (NaN, infinities, channels, functions, cycles) before anything is pushed.
func encode(typ string, data any) (json.RawMessage, error) {
	if typ == "" {
		// A log line without a type reads back as no event at all, which
		// a stored log reports as corruption: refuse it here instead.
		return nil, errors.New("session: an event needs a type")
	}
	switch v := data.(type) {
	case llm.JSONAppender:
		return v.AppendJSON(make([]byte, 0, 128)), nil
	case json.RawMessage:
		if !json.Valid(v) {
			return nil, fmt.Errorf("session: event %q carries non-JSON data", typ)
		}
		return append(json.RawMessage(nil), v...), nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("session: event %q carries non-JSON data", typ)
		}
	}
	b, err := json.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("session: event %q carries non-JSON data: %w", typ, err)
	}
	return b, nil
}

// WhenLonger returns a channel that is closed once the log holds more than
// n events (at once, when it already does). Readers that follow a session
// (an agent's event iterators) wait on it between reads of Events, so they
// never poll and never hold up the appender.
func (s *Session) WhenLonger(n int) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n > n {
		return closedChan
	}
	if s.grown == nil {
		s.grown = make(chan struct{})
	}
	return s.grown
}

// Turns returns the current turn state.
func (s *Session) Turns() TurnState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.turns
}

// WatchTurns returns the current turn state and a channel that is closed
// the next time it changes (a turn opens or closes). An agent whose turn
// must wait for another to close (an injection turn, /compact) waits on it
// instead of polling.
func (s *Session) WatchTurns() (TurnState, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turnsChanged == nil {
		s.turnsChanged = make(chan struct{})
	}
	return s.turns, s.turnsChanged
}

// noteTurn updates the turn state for a pushed event; callers hold s.mu.
func (s *Session) noteTurn(e Event) {
	switch e.Type {
	case TypeTurnStart:
		var ts struct {
			Turn int `json:"turn"`
		}
		if json.Unmarshal(e.Data, &ts) == nil {
			s.turns = TurnState{Last: ts.Turn, Open: true}
			if s.turnStarts == nil {
				s.turnStarts = map[int]bool{}
			}
			s.turnStarts[ts.Turn] = true
		}
	case TypeTurnEnd:
		s.turns.Open = false
	default:
		return
	}
	if s.turnsChanged != nil {
		close(s.turnsChanged)
		s.turnsChanged = nil
	}
}

func (s *Session) append(ctx context.Context, typ string, data any, op *SurfaceOp, sources []int64) (Event, error) {
	return s.appendCond(ctx, nil, typ, data, op, sources)
}

func (s *Session) appendCond(ctx context.Context, cond func(TurnState) bool, typ string, data any, op *SurfaceOp, sources []int64) (Event, error) {
	raw, err := encode(typ, data)
	if err != nil {
		return Event{}, err
	}
	var msg *llm.Message
	if op != nil {
		msg = typedMessage(typ, data)
	}
	return s.appendRaw(ctx, cond, typ, raw, op, sources, msg)
}

// appendRaw pushes an encoded event and delivers notifications.
func (s *Session) appendRaw(ctx context.Context, cond func(TurnState) bool, typ string, raw json.RawMessage, op *SurfaceOp, sources []int64, msg *llm.Message) (Event, error) {
	if s.redact != nil {
		if out, changed := s.redact.JSON(raw); changed {
			// The typed message cached for derivation holds the secret:
			// derive from the scrubbed payload instead, so the model's
			// next request reads what the log does.
			raw, msg = out, nil
		}
	}
	ev := Event{Type: typ, Time: s.clock().UnixMilli(), Data: raw, SurfaceOp: op, msg: msg}
	if sources != nil {
		ev.SourceEventSeqs = append([]int64(nil), sources...)
	}
	s.mu.Lock()
	if cond != nil && !cond(s.turns) {
		s.mu.Unlock()
		return Event{}, ErrCondition
	}
	ev.Seq = int64(s.n)
	s.push(ev)
	s.noteTurn(ev)
	if s.grown != nil {
		close(s.grown)
		s.grown = nil
	}
	if s.notify == nil {
		s.mu.Unlock()
		return ev, nil
	}
	s.queue = append(s.queue, ev)
	if s.delivering {
		s.mu.Unlock()
		return ev, nil
	}
	s.delivering = true
	var first error
	for i := 0; i < len(s.queue); i++ {
		next := s.queue[i]
		s.queue[i] = Event{}
		n := s.notify
		s.mu.Unlock()
		if n != nil {
			if err := deliver(ctx, n, s, next); err != nil && first == nil {
				first = err
			}
		}
		s.mu.Lock()
	}
	s.queue = s.queue[:0]
	s.delivering = false
	s.mu.Unlock()
	return ev, first
}

// deliver calls n, turning a panic into an error: a panic escaping the
// delivery loop would leave the session marked as delivering, and every
// later append would be queued for a deliverer that no longer exists.
func deliver(ctx context.Context, n Notifier, s *Session, e Event) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &kernel.PanicError{Point: "session/notify", Value: r, Stack: debug.Stack()}
		}
	}()
	return n(ctx, s, e)
}

// Messages derives the model history. The returned slice and the messages
// in it are shared with the session's cache: read them, never modify them
// (clone first). The capacity is clipped, so appending is safe.
func (s *Session) Messages() ([]llm.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.der.messages(s)
}

// Surface returns the seqs of the surface nodes, head to tail.
func (s *Session) Surface() ([]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.der.messages(s); err != nil {
		return nil, err
	}
	out := make([]int64, len(s.der.nodes))
	for i, n := range s.der.nodes {
		out[i] = n.seq
	}
	return out, nil
}

// SurfaceNode is one entry of the surface with the message it derives, so
// readers that weigh or inspect the history (compaction) need not decode
// events. Message is shared with the session's cache: read it, never
// modify it.
type SurfaceNode struct {
	Seq     int64
	Type    string
	Message llm.Message
	// Has is false for a node that yields no message (an empty assistant
	// message).
	Has bool
	// Replaces reports that the node's event replaced earlier nodes (a
	// pruned result, a summary).
	Replaces bool
}

// SurfaceNodes returns the surface's last nodes, head to tail, back to (not
// including) the first whose seq is at most after: all of them for after
// < 0; for an after that no replace has happened since, the nodes appended
// after it. The messages are the derived history's own (pairing repairs
// aside), so this costs no decoding.
func (s *Session) SurfaceNodes(after int64) ([]SurfaceNode, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.der.messages(s); err != nil {
		return nil, err
	}
	nodes := s.der.nodes
	i := len(nodes)
	for i > 0 && nodes[i-1].seq > after {
		i--
	}
	out := make([]SurfaceNode, len(nodes)-i)
	for k, n := range nodes[i:] {
		out[k] = SurfaceNode{Seq: n.seq, Type: n.typ, Message: n.msg, Has: n.has, Replaces: n.replaces}
	}
	return out, nil
}

// LastTurn returns the number of the newest turn/start, or 0.
func (s *Session) LastTurn() int { return s.Turns().Last }

// TurnOpen reports whether the newest turn boundary is a turn/start.
func (s *Session) TurnOpen() bool { return s.Turns().Open }

// HasTurnStart reports whether a turn/start for turn exists in the log.
func (s *Session) HasTurnStart(turn int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.turnStarts[turn]
}
