package term

import (
	"strings"
	"testing"
	"time"

	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/permission"
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

// The running terminal announces a finished turn with the configured
// sequence once the agent goes idle (here every turn, by OSC 777), and
// says nothing for a turn shorter than afterSeconds.
func TestNotificationAfterATurn(t *testing.T) {
	run := func(after float64) *harness {
		h := startUIWith(t, func(o *app.Options) {
			o.Config = testConfig(t,
				permission.Key.Flag("--permission-mode", permission.Settings{DefaultMode: string(permission.ModeBypass)}),
				app.NotificationsKey.Flag("--notifications", app.Notifications{Channel: "osc777", AfterSeconds: &after}))
		}, nil)
		h.send("hello there\r")
		h.wait("That was the whole loop", "✻ ")
		return h
	}
	h := run(0)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(h.out.String(), "\x1b]777;notify;dsh;dsh: the turn finished after ") {
		if time.Now().After(deadline) {
			t.Fatalf("no OSC 777 notification after the turn:\n%q", h.out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	h = run(3600)
	h.send("/help\r") // drawn after the turn's end was handled
	h.wait("Commands")
	if strings.Contains(h.out.String(), "\x1b]777;") {
		t.Fatalf("a short turn was announced:\n%q", h.out.String())
	}
}
