package term

import (
	"testing"
	"time"

	"github.com/dshq/dsh/app"
)

// Which sequence a finished turn sends: none for a short turn, the bell
// or the terminal's OSC notification for a long one, nothing in tmux
// unless asked (then OSC through tmux's passthrough), nothing when off.
func TestNotification(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	zero := 0.0
	long, short := 12*time.Second, 3*time.Second
	for _, c := range []struct {
		name string
		cfg  app.Notifications
		env  func(string) string
		took time.Duration
		want string
	}{
		{"short turn", app.Notifications{}, env(), short, ""},
		{"long turn, plain terminal", app.Notifications{}, env("TERM", "xterm-256color"), long, "\a"},
		{"iTerm2", app.Notifications{}, env("TERM_PROGRAM", "iTerm.app"), long, "\x1b]9;done\x07"},
		{"VTE", app.Notifications{}, env("VTE_VERSION", "7600"), long, "\x1b]777;notify;dsh;done\x07"},
		{"tmux, not asked", app.Notifications{Channel: "bell"}, env("TMUX", "/tmp/tmux-1/default,1,0"), long, ""},
		{"tmux, asked, bell", app.Notifications{InTmux: true}, env("TMUX", "x"), long, "\a"},
		{"tmux, asked, osc9", app.Notifications{InTmux: true, Channel: "osc9"}, env("TMUX", "x"), long, "\x1bPtmux;\x1b\x1b]9;done\x07\x1b\\"},
		{"off", app.Notifications{Channel: "off"}, env("TERM_PROGRAM", "iTerm.app"), long, ""},
		{"every turn", app.Notifications{AfterSeconds: &zero, Channel: "osc777"}, env(), short, "\x1b]777;notify;dsh;done\x07"},
		{"control characters dropped", app.Notifications{Channel: "osc9"}, env(), long, "\x1b]9;done\x07"},
	} {
		what := "done"
		if c.name == "control characters dropped" {
			what = "do\x07n\x1b\u009ce"
		}
		if got := notification(c.cfg, c.env, c.took, what); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
