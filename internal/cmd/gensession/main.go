// Command gensession writes one long synthetic session into a dsh store, for
// measuring what reads whole sessions (resume, `dsh sessions show` and
// `export`, ACP session/load) at sizes no test run produces:
//
//	go run ./internal/cmd/gensession -home /tmp/h -events 1000000
//
// The log has the shape of a real streamed one: turns of tool steps, each
// step a step/start, a text block streamed as many small deltas (block-start,
// text-delta…, a block-end carrying the whole block, usage, finish), the
// assistant/message, a bash tool/call and its tool/result, and a step/end —
// so nine events in ten are streamed chunks, as in the logs issue 30
// measured. It goes through the store's own write path (JSONL by default,
// -store sqlite), so what it writes is exactly what dsh writes. It prints
// the session id.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/backends"
)

func main() {
	home := flag.String("home", "", "the $DSH_HOME to write into (required)")
	events := flag.Int("events", 1_000_000, "events to write (rounded up to whole turns)")
	steps := flag.Int("steps", 20, "tool steps per turn")
	deltas := flag.Int("deltas", 40, "text deltas per step")
	output := flag.Int("output", 400, "bytes each tool result carries")
	cwd := flag.String("cwd", "", "the session's working directory (default: the current one)")
	kind := flag.String("store", backends.JSONL, "the store: jsonl or sqlite")
	every := flag.Int("compact-every", 0, "compact the history at the start of every n-th turn, as a long session's window forces (0: never)")
	snap := flag.Bool("snapshot", true, "write the snapshot a turn end of dsh writes")
	flag.Parse()
	if *home == "" {
		fmt.Fprintln(os.Stderr, "gensession: -home is required")
		os.Exit(2)
	}
	if *cwd == "" {
		*cwd, _ = os.Getwd()
	}
	id, err := run(*home, *kind, *cwd, *events, *steps, *deltas, *output, *every, *snap)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gensession:", err)
		os.Exit(1)
	}
	fmt.Println(id)
}

func run(home, kind, cwd string, total, steps, deltas, output, every int, snap bool) (session.ID, error) {
	ctx := context.Background()
	if err := os.MkdirAll(home, 0o700); err != nil {
		return "", err
	}
	b, err := backends.Open(ctx, backends.Config{Store: kind}, backends.Options{Home: home, NoSync: true})
	if err != nil {
		return "", err
	}
	scope := kernel.NewScope("gensession")
	defer scope.Close()
	c, err := store.Attach(scope, nil, b, store.Options{})
	if err != nil {
		return "", err
	}
	now := time.Now().UnixMilli()
	id := session.ID(fmt.Sprintf("gen-%d", now))
	if err := c.Create(ctx, session.Header{ID: id, CreatedAt: now, Cwd: cwd}); err != nil {
		return "", err
	}
	g := &gen{c: c, id: id, t: now}
	words := strings.Repeat("lorem ipsum dolor sit amet ", 1+output/27)[:output]
	for turn := 1; g.seq < int64(total); turn++ {
		g.add(session.TypeTurnStart, session.TurnStart{Turn: turn, Trigger: session.Trigger{Kind: session.TriggerMessage}}, nil)
		op := session.AppendOp
		if every > 0 && turn > 1 && (turn-1)%every == 0 {
			g.compact(turn)
		}
		g.surface(session.TypeUserMessage, session.Prompt{Content: []llm.Block{llm.Text(fmt.Sprintf("task %d: keep going", turn))}, Source: llm.Source{Kind: llm.SourceUser}}, &op)
		for step := 1; step <= steps; step++ {
			g.add(session.TypeStepStart, session.StepBoundary{Turn: turn, Step: step}, nil)
			chunk := func(ch llm.Chunk) {
				g.add(session.TypeAssistantChunk, session.AssistantChunk{Turn: turn, Step: step, Chunk: ch}, nil)
			}
			chunk(llm.StartChunk(0, llm.BlockText))
			var text strings.Builder
			for d := 0; d < deltas; d++ {
				piece := fmt.Sprintf("word%d ", d)
				text.WriteString(piece)
				chunk(llm.TextChunk(0, piece))
			}
			block := llm.Text(text.String())
			chunk(llm.Chunk{Type: llm.ChunkBlockEnd, Index: 0, Block: &block})
			usage := &llm.Usage{InputTokens: 1000 + step, OutputTokens: 50}
			chunk(llm.Chunk{Type: llm.ChunkUsage, Usage: usage})
			callID := llm.CallID(fmt.Sprintf("call-%d-%d", turn, step))
			args := fmt.Sprintf(`{"command":"echo step %d"}`, step)
			chunk(llm.Chunk{Type: llm.ChunkFinish, Finish: &llm.FinishReason{Kind: llm.FinishToolCalls}})
			g.surface(session.TypeAssistantMessage, session.AssistantMessage{Turn: turn, Step: step, Model: "gen",
				Usage:   usage,
				Content: []llm.Block{block, {Type: llm.BlockToolCall, ID: callID, Name: "bash", Arguments: args}}}, &op)
			g.add(session.TypeToolCall, session.ToolCall{Turn: turn, Step: step, CallID: callID, Name: "bash", Arguments: args}, nil)
			g.surface(session.TypeToolResult, session.ToolResult{Turn: turn, Step: step, CallID: callID, Content: []llm.Block{llm.Text(words)}}, &op)
			g.add(session.TypeStepEnd, session.StepBoundary{Turn: turn, Step: step}, nil)
		}
		g.add(session.TypeTurnEnd, session.TurnEnd{Turn: turn, Reason: session.EndReason{Kind: session.EndCompleted}}, nil)
		if err := g.flush(ctx, 4096); err != nil {
			return "", err
		}
	}
	if err := g.flush(ctx, 1); err != nil {
		return "", err
	}
	if err := c.Release(ctx, id); err != nil {
		return "", err
	}
	if snap {
		if err := snapshot(ctx, c, b, id); err != nil {
			return "", err
		}
	}
	return id, nil
}

// snapshot writes the snapshot dsh writes at a turn end: the log is
// resumed (replayed: it has none yet), its snapshot taken and stored.
func snapshot(ctx context.Context, c *store.Coordinator, b store.Backend, id session.ID) error {
	sb, ok := b.(store.Snapshots)
	if !ok {
		return fmt.Errorf("the %s store keeps no snapshots", b.Name())
	}
	s, err := c.Resume(ctx, id, func(o session.Options) (*session.Session, error) { return session.New(id, o) })
	if err != nil {
		return err
	}
	sn, err := s.Snapshot(ctx)
	if err != nil {
		return err
	}
	data, err := sn.Encode()
	if err != nil {
		return err
	}
	infos, err := c.List(ctx, store.Query{})
	if err != nil {
		return err
	}
	for _, in := range infos {
		if in.Header.ID == id {
			if err := sb.PutSnapshot(ctx, id, store.StoredSnapshot{Covers: sn.Covers(), Summary: in.Summary, Data: data}); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "gensession: snapshot of %d events, %d bytes, %d kept\n", sn.Covers(), len(data), sn.Kept())
			return c.Release(ctx, id)
		}
	}
	return fmt.Errorf("session %s is not listed", id)
}

type gen struct {
	// surf is the seq of every surface node since the last compaction.
	surf  []int64
	c     *store.Coordinator
	id    session.ID
	seq   int64
	t     int64
	batch []session.Event
	err   error
}

func (g *gen) add(typ string, data any, op *session.SurfaceOp) {
	raw, err := json.Marshal(data)
	if err != nil && g.err == nil {
		g.err = err
	}
	g.batch = append(g.batch, session.Event{Type: typ, Seq: g.seq, Time: g.t, Data: raw, SurfaceOp: op})
	g.seq++
	g.t++
}

// surface adds a surface event.
func (g *gen) surface(typ string, data any, op *session.SurfaceOp) {
	g.surf = append(g.surf, g.seq)
	g.add(typ, data, op)
}

// compact summarizes everything since the last compaction, as the
// compactor does: compact/start, compact/summary, the framed summary as a
// user/message replacing the nodes it stands for, compact/end.
func (g *gen) compact(turn int) {
	if len(g.surf) == 0 {
		return
	}
	first, last := g.surf[0], g.surf[len(g.surf)-1]
	start := g.seq
	g.add("compact/start", map[string]any{"turn": turn, "trigger": "auto"}, nil)
	sum := g.seq
	text := fmt.Sprintf("## Goal\nkeep going (turns up to %d)\n## Decisions\nnone\n", turn-1)
	g.add("compact/summary", map[string]any{"summary": text, "shadowedRange": map[string]int64{"start": first, "end": last}}, nil)
	op := session.ReplaceOp(first, last)
	g.surf = g.surf[:0]
	g.surface(session.TypeUserMessage, session.Prompt{Content: []llm.Block{llm.Text(text)}, Source: llm.PluginSource("compact")}, &op)
	g.batch[len(g.batch)-1].SourceEventSeqs = []int64{start, sum}
	g.add("compact/end", map[string]any{"turn": turn}, nil)
}

// flush appends the batch once it holds at least min events.
func (g *gen) flush(ctx context.Context, min int) error {
	if g.err != nil {
		return g.err
	}
	if len(g.batch) < min {
		return nil
	}
	err := g.c.Append(ctx, g.id, g.batch)
	g.batch = g.batch[:0]
	return err
}
