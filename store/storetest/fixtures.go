package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/dshq/dsh/internal/ownership"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
)

// Op is one scripted append: applied to a live session, or built into a
// stored event with [Build].
type Op struct {
	Type    string
	Data    any
	Surface bool
	Sources []int64
}

// BaseTime is the time of the event with seq 0 in built logs.
const BaseTime int64 = 1_780_000_000_000

// Build turns ops into events with seqs from start (time = BaseTime + seq).
func Build(start int64, ops []Op) []session.Event {
	out := make([]session.Event, len(ops))
	for i, op := range ops {
		raw, err := json.Marshal(op.Data)
		if err != nil {
			panic(err)
		}
		seq := start + int64(i)
		e := session.Event{Type: op.Type, Seq: seq, Time: BaseTime + seq, Data: raw}
		if op.Surface {
			a := session.AppendOp
			e.SurfaceOp = &a
			if len(op.Sources) > 0 {
				e.SourceEventSeqs = append([]int64(nil), op.Sources...)
			}
		}
		out[i] = e
	}
	return out
}

// Apply appends ops to a live session.
func Apply(ctx context.Context, s *session.Session, ops []Op) error {
	w := s.Writer(ownership.Fixtures)
	for _, op := range ops {
		var err error
		if op.Surface {
			_, err = w.AppendSurface(ctx, op.Type, op.Data, session.AppendOp, op.Sources)
		} else {
			_, err = w.Append(ctx, op.Type, op.Data)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// TurnStart opens turn n.
func TurnStart(n int) Op {
	src := llm.UserSource
	return Op{Type: session.TypeTurnStart, Data: session.TurnStart{Turn: n, Trigger: session.Trigger{Kind: session.TriggerMessage, Source: &src}}}
}

// TurnEnd closes turn n as completed.
func TurnEnd(n int) Op {
	return Op{Type: session.TypeTurnEnd, Data: session.TurnEnd{Turn: n, Reason: session.EndReason{Kind: session.EndCompleted}}}
}

// StepStart opens step s of turn n.
func StepStart(n, s int) Op {
	return Op{Type: session.TypeStepStart, Data: session.StepBoundary{Turn: n, Step: s}}
}

// StepEnd closes step s of turn n.
func StepEnd(n, s int) Op {
	return Op{Type: session.TypeStepEnd, Data: session.StepBoundary{Turn: n, Step: s}}
}

// User is a user prompt.
func User(text string) Op {
	return Op{Type: session.TypeUserMessage, Data: session.Prompt{Content: []llm.Block{llm.Text(text)}, Source: llm.UserSource}, Surface: true}
}

// Chunk is one streamed text delta of step s of turn n.
func Chunk(n, s int, text string) Op {
	return Op{Type: session.TypeAssistantChunk, Data: session.AssistantChunk{Turn: n, Step: s, Chunk: llm.TextChunk(0, text)}}
}

// Assistant is an assistant message with text and tool calls.
func Assistant(n, s int, text string, calls ...llm.CallID) Op {
	content := []llm.Block{llm.Text(text)}
	for _, id := range calls {
		content = append(content, llm.ToolCall(id, "bash", `{"command":"echo hi"}`))
	}
	return Op{Type: session.TypeAssistantMessage, Data: session.AssistantMessage{Turn: n, Step: s, Content: content}, Surface: true}
}

// ToolCall is the audit record of a call.
func ToolCall(n, s int, id llm.CallID) Op {
	return Op{Type: session.TypeToolCall, Data: session.ToolCall{Turn: n, Step: s, CallID: id, Name: "bash", Arguments: `{"command":"echo hi"}`}}
}

// ToolResult answers a call; callSeq is the seq of its tool/call.
func ToolResult(n, s int, id llm.CallID, callSeq int64) Op {
	return Op{Type: session.TypeToolResult, Data: session.ToolResult{Turn: n, Step: s, CallID: id, Content: []llm.Block{llm.Text("hi\n")}}, Surface: true, Sources: []int64{callSeq}}
}

// OneTurn is a closed turn n: turn/start, user/message, step/start,
// assistant/message, step/end, turn/end (6 events).
func OneTurn(n int, prompt string) []Op {
	return []Op{TurnStart(n), User(prompt), StepStart(n, 1), Assistant(n, 1, "ok"), StepEnd(n, 1), TurnEnd(n)}
}

// ToolStep is one step that streams chunks, calls a tool and gets its
// result; start is the seq its first event will get.
func ToolStep(n, s int, start int64, chunks int, id llm.CallID) []Op {
	ops := []Op{StepStart(n, s)}
	var src []int64
	for i := range chunks {
		src = append(src, start+1+int64(i))
		ops = append(ops, Chunk(n, s, fmt.Sprintf("c%d ", i)))
	}
	a := Assistant(n, s, "calling", id)
	a.Sources = src
	ops = append(ops, a)
	callSeq := start + int64(len(ops))
	ops = append(ops, ToolCall(n, s, id), ToolResult(n, s, id, callSeq), StepEnd(n, s))
	return ops
}

// FixedClock returns a clock that advances one millisecond per call.
func FixedClock() func() time.Time {
	var mu sync.Mutex
	t := time.UnixMilli(BaseTime)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Millisecond)
		return t
	}
}

// Faulty wraps a backend and fails chosen hooks on demand; it also counts
// the events written, so tests can prove nothing was written twice.
type Faulty struct {
	store.Backend

	mu       sync.Mutex
	failNext map[string]error // hook name → error for its next call
	Appended int              // events written by successful AppendBatch
	Batches  int
}

// NewFaulty wraps b.
func NewFaulty(b store.Backend) *Faulty {
	return &Faulty{Backend: b, failNext: map[string]error{}}
}

// FailNext makes the next call of hook ("AppendBatch", "CommitRepair",
// "LoadStored", "LoadLive", "Lock") fail with err.
func (f *Faulty) FailNext(hook string, err error) {
	f.mu.Lock()
	f.failNext[hook] = err
	f.mu.Unlock()
}

func (f *Faulty) take(hook string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	err := f.failNext[hook]
	delete(f.failNext, hook)
	return err
}

// Counts returns the events and batches written so far.
func (f *Faulty) Counts() (events, batches int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.Appended, f.Batches
}

// AppendBatch fails when armed, else writes and counts.
func (f *Faulty) AppendBatch(ctx context.Context, b store.Batch) error {
	if err := f.take("AppendBatch"); err != nil {
		return err
	}
	if err := f.Backend.AppendBatch(ctx, b); err != nil {
		return err
	}
	f.mu.Lock()
	f.Appended += len(b.Events)
	f.Batches++
	f.mu.Unlock()
	return nil
}

// CommitRepair fails when armed.
func (f *Faulty) CommitRepair(ctx context.Context, r store.Repair) error {
	if err := f.take("CommitRepair"); err != nil {
		return err
	}
	return f.Backend.CommitRepair(ctx, r)
}

// LoadStored fails when armed.
func (f *Faulty) LoadStored(ctx context.Context, id session.ID) (*store.Stored, error) {
	if err := f.take("LoadStored"); err != nil {
		return nil, err
	}
	return f.Backend.LoadStored(ctx, id)
}

// LoadLive fails when armed.
func (f *Faulty) LoadLive(ctx context.Context, id session.ID, cwd string) (*store.Stored, error) {
	if err := f.take("LoadLive"); err != nil {
		return nil, err
	}
	return f.Backend.LoadLive(ctx, id, cwd)
}

// Lock fails when armed.
func (f *Faulty) Lock(ctx context.Context, id session.ID) error {
	if err := f.take("Lock"); err != nil {
		return err
	}
	return f.Backend.Lock(ctx, id)
}

// ReadRange fails when armed, else reads through the wrapped backend.
func (f *Faulty) ReadRange(ctx context.Context, id session.ID, from, to int64, fn func(session.Event) error) error {
	if err := f.take("ReadRange"); err != nil {
		return err
	}
	sr, ok := f.Backend.(store.SpanReader)
	if !ok {
		return fmt.Errorf("storetest: %s does not implement store.SpanReader", f.Backend.Name())
	}
	return sr.ReadRange(ctx, id, from, to, fn)
}

// PutSnapshot fails when armed, else writes through the wrapped backend.
func (f *Faulty) PutSnapshot(ctx context.Context, id session.ID, snap store.StoredSnapshot) error {
	if err := f.take("PutSnapshot"); err != nil {
		return err
	}
	sb, ok := f.Backend.(store.Snapshots)
	if !ok {
		return fmt.Errorf("storetest: %s does not implement store.Snapshots", f.Backend.Name())
	}
	return sb.PutSnapshot(ctx, id, snap)
}

// LoadSnapshot fails when armed, else reads through the wrapped backend
// (nothing, for a backend without snapshots).
func (f *Faulty) LoadSnapshot(ctx context.Context, id session.ID) (*store.StoredSnapshot, *store.Stored, error) {
	if err := f.take("LoadSnapshot"); err != nil {
		return nil, nil, err
	}
	sb, ok := f.Backend.(store.Snapshots)
	if !ok {
		return nil, nil, nil
	}
	return sb.LoadSnapshot(ctx, id)
}
