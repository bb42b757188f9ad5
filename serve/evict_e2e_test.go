package serve_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dshq/dsh/internal/dshtest"
	"github.com/dshq/dsh/serve/api"
	"github.com/dshq/dsh/serve/client"
	"github.com/dshq/dsh/session"
)

// TestEvictedBeforeFirstMessage: a session created without a prompt and
// evicted for idleness before its first message (under load, the message
// can come later than --idle-evict) takes that message: it has no log to
// load and starts afresh under its id. It failed with 500 "session not
// found" (servebench at 800 sessions: 13 errors).
func TestEvictedBeforeFirstMessage(t *testing.T) {
	e := dshtest.New(t, "..", reply)
	root := t.TempDir()
	proj := filepath.Join(root, "proj")
	mkdirs(t, proj)
	p := startServe(t, e, nil, "--root", root, "--idle-evict", "100ms")
	c := client.New(p.URL, token(t, e, "admin"))
	ctx := context.Background()
	s, err := c.CreateSession(ctx, api.CreateSession{Workspace: "proj"})
	if err != nil {
		t.Fatal(err)
	}
	for {
		got, err := c.Session(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == api.StatusStored {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := c.Send(ctx, s.ID, "are you there"); err != nil {
		t.Fatalf("send to a session evicted before its first message: %v", err)
	}
	turn := collectTurn(t, c, s.ID, 0)
	var text strings.Builder
	for _, ev := range turn {
		if ev.Type == session.TypeAssistantChunk {
			ch, _ := session.Decode[session.AssistantChunk](ev)
			text.WriteString(ch.Chunk.Text)
		}
	}
	if end, _ := session.Decode[session.TurnEnd](turn[len(turn)-1]); end.Reason.Kind != session.EndCompleted ||
		!strings.Contains(text.String(), "answering are you there") {
		t.Fatalf("turn ended %+v with %q", end.Reason, text.String())
	}
	if got, err := c.Session(ctx, s.ID); err != nil || got.ID != s.ID {
		t.Fatalf("the session after its turn: %v %+v", err, got)
	}
}
