package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A finished turn's notification through the real binary in tmux, read
// from the bytes dsh writes to its pane (tmux pipe-pane): the settings'
// "notifications" (every turn, OSC 9) say nothing inside tmux unless
// inTmux asks, and then OSC 9 goes through tmux's passthrough.
func TestNotificationInTmux(t *testing.T) {
	for _, c := range []struct {
		name, settings string
		want           bool
	}{
		{"not asked", `{"channel":"osc9","afterSeconds":0}`, false},
		{"asked", `{"channel":"osc9","afterSeconds":0,"inTmux":true}`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newTermFixture(t, "", chatText("Finished the work.", 10, 1))
			f.addSettings(t, `"notifications":`+c.settings)
			tt := f.tmux(t, "--trust")
			raw := filepath.Join(t.TempDir(), "pane.out")
			tt.tmux("pipe-pane", "-o", "-t", tt.name, "cat >> "+raw)
			tt.waitFor("local/m", "›")
			tt.text("do the work")
			tt.keys("Enter")
			tt.waitFor("Finished the work.", "✻ ")
			// The notification is written when the agent goes idle, before
			// the frame /help draws.
			tt.text("/help")
			tt.keys("Enter")
			tt.waitFor("Commands")
			tt.text("/exit")
			tt.keys("Enter")
			tt.waitFor("DSH-EXITED:0")
			b, err := os.ReadFile(raw)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Contains(string(b), "\x1bPtmux;\x1b\x1b]9;")
			if got != c.want || strings.Contains(strings.ReplaceAll(string(b), "\x1bPtmux;\x1b\x1b]9;", ""), "]9;") {
				t.Fatalf("passthrough OSC 9 written: %v, want %v; pane output:\n%q", got, c.want, b)
			}
		})
	}
}
