package term

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/dshq/dsh/app"
)

// A turn that ran longer than the "notifications" setting's afterSeconds
// (default 10) is announced when it finishes, so a user who switched to
// another window learns the agent waits for them: by a desktop
// notification where the terminal turns OSC 9 or OSC 777 into one, else
// by the bell. Inside tmux nothing is sent unless inTmux asks: tmux
// multiplies the bell to every client and drops OSC sequences without
// passthrough.

// defaultNotifyAfter is how long a turn runs before it is announced.
const defaultNotifyAfter = 10 * time.Second

// notification is the escape sequence announcing a finished turn that
// ran for took, "" when none is due. env reads the environment.
func notification(cfg app.Notifications, env func(string) string, took time.Duration, what string) string {
	after := defaultNotifyAfter
	if cfg.AfterSeconds != nil {
		after = time.Duration(*cfg.AfterSeconds * float64(time.Second))
	}
	if cfg.Channel == "off" || took < after {
		return ""
	}
	inTmux := env("TMUX") != ""
	if inTmux && !cfg.InTmux {
		return ""
	}
	channel := cfg.Channel
	if channel == "" || channel == "auto" {
		channel = autoChannel(env)
	}
	body := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1 // nothing may end the sequence early
		}
		return r
	}, what)
	var seq string
	switch channel {
	case "osc9":
		seq = "\x1b]9;" + body + "\x07"
	case "osc777":
		seq = "\x1b]777;notify;dsh;" + body + "\x07"
	default:
		return "\a" // tmux passes the bell on by itself
	}
	if inTmux {
		// tmux's passthrough: the sequence inside a DCS, its escapes doubled.
		seq = "\x1bPtmux;" + strings.ReplaceAll(seq, "\x1b", "\x1b\x1b") + "\x1b\\"
	}
	return seq
}

// autoChannel picks what the terminal shows: OSC 9 for iTerm2, WezTerm,
// Ghostty, kitty and Windows Terminal, OSC 777 for VTE terminals (GNOME
// Terminal, Tilix) and foot, the bell elsewhere.
func autoChannel(env func(string) string) string {
	switch env("TERM_PROGRAM") {
	case "iTerm.app", "WezTerm", "ghostty":
		return "osc9"
	}
	switch {
	case env("WT_SESSION") != "", env("KITTY_WINDOW_ID") != "":
		return "osc9"
	case env("VTE_VERSION") != "", strings.HasPrefix(env("TERM"), "foot"):
		return "osc777"
	}
	return "bell"
}

// notify announces what happened to a turn that has run for took, if
// that is long enough: it finished, or it waits for an answer.
func (u *ui) notify(took time.Duration, asking bool) {
	var cfg app.Notifications
	if u.app.Config != nil {
		cfg = app.NotificationsKey.Get(u.app.Config)
	}
	what := fmt.Sprintf("dsh: the turn finished after %s in %s", fmtDur(took.Milliseconds()), filepath.Base(u.cwd()))
	if asking {
		what = "dsh: a question waits for your answer in " + filepath.Base(u.cwd())
	}
	if seq := notification(cfg, u.o.Env, took, what); seq != "" {
		_, _ = fmt.Fprint(u.out, seq)
	}
}
