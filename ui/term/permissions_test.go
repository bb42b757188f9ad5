package term

import (
	"strings"
	"testing"

	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/permission"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/settings"
)

// withChecker configures permission rules, each from the settings file
// its Source names.
func withChecker(t *testing.T, rules ...permission.Rule) func(*app.Options) {
	return func(o *app.Options) {
		var layers []settings.File
		for _, r := range rules {
			var s permission.Settings
			switch r.Behavior {
			case permission.Allow:
				s.Allow = []string{r.Text}
			case permission.Ask:
				s.Ask = []string{r.Text}
			case permission.Deny:
				s.Deny = []string{r.Text}
			}
			layers = append(layers, permission.Key.In(settings.LayerUser, r.Source, s))
		}
		o.Config = testConfig(t, layers...)
	}
}

func ruleEvents(h *harness) []permission.RuleEvent {
	var out []permission.RuleEvent
	for _, e := range h.events(permission.EventRule) {
		ev, err := session.Decode[permission.RuleEvent](e)
		if err == nil {
			out = append(out, ev)
		}
	}
	return out
}

func TestPermissionsListGroupedBySource(t *testing.T) {
	h := startUIWith(t, withChecker(t,
		permission.Rule{Text: "Bash(git diff:*)", Behavior: permission.Allow, Source: "/etc/user/settings.json"},
		permission.Rule{Text: "Read(./secrets/**)", Behavior: permission.Deny, Source: "/proj/.claude/settings.json"},
		permission.Rule{Text: "Bash(git push:*)", Behavior: permission.Ask, Source: "/proj/.claude/settings.local.json"},
	), nil)
	h.send("/permissions\r")
	h.wait("permission mode: default",
		"Deny (1)", "Read(./secrets/**)  (/proj/.claude/settings.json)",
		"Ask (1)", "Bash(git push:*)  (/proj/.claude/settings.local.json)",
		"Allow (1)", "Bash(git diff:*)  (/etc/user/settings.json)")
	s := h.screen()
	if d, a, al := strings.Index(s, "Deny (1)"), strings.Index(s, "Ask (1)"), strings.Index(s, "Allow (1)"); d >= a || a >= al {
		t.Fatalf("groups out of order (deny %d, ask %d, allow %d)", d, a, al)
	}
	h.send("/permissions frobnicate\r")
	h.wait("usage: /permissions")
	h.exit()
}

func TestPermissionsAddAndRemoveSessionRules(t *testing.T) {
	h := startUIWith(t, withChecker(t), nil)
	c := h.app.Permission
	sid := func() string {
		var id string
		// The only live top-level session is the UI's.
		for _, s := range h.app.Host.Sessions.List() {
			if s.Header().ParentSession == "" {
				id = string(s.ID())
			}
		}
		return id
	}

	h.send("/permissions allow Bash(ls:*)\r")
	h.wait("added session rule allow Bash(ls:*)")
	h.send("/permissions deny Read(./secrets/**)\r")
	h.wait("added session rule deny Read(./secrets/**)")
	h.send("/permissions ask Write\r")
	h.wait("added session rule ask Write")
	want := map[string]permission.Behavior{"Bash(ls:*)": permission.Allow, "Read(./secrets/**)": permission.Deny, "Write": permission.Ask}
	got := map[string]permission.Behavior{}
	for _, r := range c.Rules(sid()) {
		if r.Source != permission.SourceSession {
			t.Fatalf("rule %v: source %q", r, r.Source)
		}
		got[r.Text] = r.Behavior
	}
	if len(got) != 3 || got["Bash(ls:*)"] != want["Bash(ls:*)"] || got["Read(./secrets/**)"] != want["Read(./secrets/**)"] || got["Write"] != want["Write"] {
		t.Fatalf("session rules %v", got)
	}
	h.send("/permissions\r")
	h.wait("Deny (1)", "Read(./secrets/**)  (session)", "Ask (1)", "Write  (session)", "Allow (1)", "Bash(ls:*)  (session)")

	// An invalid rule: one line, nothing added.
	h.send("/permissions allow Bash(ls\r")
	h.wait(`invalid rule: permission: rule "Bash(ls"`, "missing closing parenthesis")
	h.send("/permissions deny NotATool(x y\r")
	h.wait("invalid rule:")
	if n := len(c.Rules(sid())); n != 3 {
		t.Fatalf("invalid rules changed the set: %d rules", n)
	}

	h.send("/permissions remove Write\r")
	h.wait("removed session rule ask Write")
	h.send("/permissions remove Write\r")
	h.wait("no session rule Write")
	if n := len(c.Rules(sid())); n != 2 {
		t.Fatalf("after remove: %v", c.Rules(sid()))
	}

	// Recorded in the log at the session's next step (no turn was open).
	h.send("/permissions mode bypassPermissions\r")
	h.wait("permission mode: bypassPermissions")
	h.send("go\r")
	h.wait("That was the whole loop", "✻ ")
	evs := ruleEvents(h)
	var added, removed []string
	for _, ev := range evs {
		if ev.Removed {
			removed = append(removed, ev.Rule)
		} else {
			added = append(added, string(ev.Behavior)+" "+ev.Rule)
		}
	}
	if strings.Join(added, ",") != "allow Bash(ls:*),deny Read(./secrets/**),ask Write" || strings.Join(removed, ",") != "Write" {
		t.Fatalf("recorded rule events: added %v removed %v", added, removed)
	}

	// Resume keeps them: /clear, then /resume the session.
	h.send("/clear\r")
	h.wait("── new session")
	h.send("/permissions\r")
	h.wait("no rules")
	h.send("/resume\r")
	h.wait("Resume a session", "❯ go")
	h.send("\r")
	h.wait("── resumed session")
	h.send("/permissions\r")
	h.wait("Deny (1)", "Read(./secrets/**)  (session)", "Allow (1)", "Bash(ls:*)  (session)")
	h.exit()
}
