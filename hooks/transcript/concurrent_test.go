package transcript_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dshq/dsh/hooks/transcript"
	"github.com/dshq/dsh/internal/ownership"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
)

// TestTranscriptConcurrentSessions creates sessions and appends to them
// from many goroutines at once, as dsh serve's sessions do: each session's
// transcript has exactly its own lines, in order. Under -race it guards the
// writer's map of open transcripts, which every event looks up while new
// sessions add theirs.
func TestTranscriptConcurrentSessions(t *testing.T) {
	dir := t.TempDir()
	live := session.NewLive(nil)
	scope := kernel.NewScope("test")
	w := transcript.New(filepath.Join(dir, "transcripts"), "9.9.9", nil)
	if err := w.Install(scope, live); err != nil {
		t.Fatal(err)
	}
	const sessions, lines = 8, 25
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Go(func() {
			s, err := live.Create(context.Background(), scope, session.ID(fmt.Sprintf("c%d", i)), session.Options{Header: session.Header{Cwd: dir}})
			if err != nil {
				t.Error(err)
				return
			}
			for j := range lines {
				text := fmt.Sprintf("<s%d-l%d>", i, j)
				if _, err := s.Writer(ownership.Fixtures).AppendSurface(context.Background(), session.TypeContextMessage,
					session.Prompt{Content: []llm.Block{llm.Text(text)}}, session.AppendOp, nil); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := scope.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range sessions {
		got := readLines(t, w.Path(session.ID(fmt.Sprintf("c%d", i))))
		var texts []string
		for _, l := range got {
			if s := fmt.Sprint(l["message"]); strings.Contains(s, "<s") {
				texts = append(texts, s)
			}
		}
		if len(texts) != lines {
			t.Fatalf("session %d: %d lines with a message, want %d: %v", i, len(texts), lines, texts)
		}
		for j, s := range texts {
			if want := fmt.Sprintf("<s%d-l%d>", i, j); !strings.Contains(s, want) {
				t.Errorf("session %d line %d: %s, want %q", i, j, s, want)
			}
		}
	}
}
