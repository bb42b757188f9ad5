// Package hooks runs unmodified Claude Code and Codex hook files. Hooks
// are shell commands that receive a JSON payload on stdin when something
// happens (a prompt is submitted, a tool is about to run, the agent is about
// to stop) and answer with an exit code and optional JSON that can block,
// allow, ask, rewrite the tool input, add context, or end the turn.
//
// The bridge maps each hook event onto one of dsh's interception points and
// each decision onto the core's decision types, so the consistent input
// rewrite, the approval seam and the durable log apply to hooks exactly as
// to native plugins. Tool names and arguments are translated to the dialect's
// vocabulary (Bash, Read, Edit, …) so matchers written for Claude Code fire
// unchanged, and an updatedInput written in Claude Code's argument names
// lands on dsh's.
package hooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/dshq/dsh/doctor"
)

// Dialect names.
const (
	Claude = "claude"
	Codex  = "codex"
)

// DefaultTimeoutSeconds is the one default hook timeout (both dialects).
const DefaultTimeoutSeconds = 600

// Hook is one command hook.
type Hook struct {
	Command string
	Timeout float64 // seconds; 0 = default
	// Source is the file the hook came from.
	Source string
	// Project is true for hooks from a project directory (they need trust).
	Project bool
}

// Group is a matcher and its hooks.
type Group struct {
	Matcher string
	Hooks   []Hook
}

// Config is the hooks of one dialect by event name.
type Config struct {
	Dialect  string
	Events   map[string][]Group
	Warnings []string
	// Disabled is set by disableAllHooks in one of the user's own files:
	// no hook runs.
	Disabled bool
	// DisabledByProject is set by disableAllHooks in a project's file: it
	// counts only where the project is trusted (an untrusted repository
	// must not be able to switch off the user's own hooks).
	DisabledByProject bool
}

// Files returns the hook files a dialect reads, lowest precedence first:
// Claude Code reads ~/.claude/settings.json, .claude/settings.json and
// .claude/settings.local.json; Codex reads ~/.codex/hooks.json and
// .codex/hooks.json. userHome is the user's home directory.
func Files(dialect, userHome, project string) (user, proj []string) {
	switch dialect {
	case Claude:
		if userHome != "" {
			user = append(user, filepath.Join(userHome, ".claude", "settings.json"))
		}
		if project != "" {
			proj = append(proj, filepath.Join(project, ".claude", "settings.json"), filepath.Join(project, ".claude", "settings.local.json"))
		}
	case Codex:
		if userHome != "" {
			user = append(user, filepath.Join(userHome, ".codex", "hooks.json"))
		}
		if project != "" {
			proj = append(proj, filepath.Join(project, ".codex", "hooks.json"))
		}
	}
	return user, proj
}

// Load reads and merges hook files. Missing files are skipped; unreadable
// or invalid ones are reported in Warnings and skipped, never fatal. Hooks
// from project files are marked Project. Identical commands on the same
// event and matcher run once.
func Load(dialect string, user, project []string) Config {
	c := Config{Dialect: dialect, Events: map[string][]Group{}}
	for _, f := range user {
		c.addFile(f, false)
	}
	for _, f := range project {
		c.addFile(f, true)
	}
	return c
}

// AddRaw merges hooks given inline (dsh's own settings "hooks" key, in the
// Claude Code format).
func (c *Config) AddRaw(source string, events map[string]json.RawMessage, project bool) {
	b, _ := json.Marshal(map[string]any{"hooks": events})
	c.add(source, b, project)
}

func (c *Config) addFile(path string, project bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.Warnings = append(c.Warnings, fmt.Sprintf("hooks: cannot read %s: %v", path, err))
		}
		return
	}
	c.add(path, b, project)
}

func (c *Config) add(source string, b []byte, project bool) {
	var root map[string]json.RawMessage
	if err := json.Unmarshal(b, &root); err != nil {
		c.Warnings = append(c.Warnings, fmt.Sprintf("hooks: %s is not a JSON object: %v", source, err))
		return
	}
	if raw, ok := root["disableAllHooks"]; ok {
		var off bool
		if json.Unmarshal(raw, &off) == nil && off {
			if project {
				c.DisabledByProject = true
			} else {
				c.Disabled = true
			}
		}
	}
	events := root
	if raw, ok := root["hooks"]; ok {
		var inner map[string]json.RawMessage
		if json.Unmarshal(raw, &inner) == nil {
			events = inner
		}
	}
	for name, raw := range events {
		if name == "disableAllHooks" {
			continue
		}
		var groups []struct {
			Matcher *string `json:"matcher"`
			Hooks   []struct {
				Type       *string  `json:"type"`
				Command    *string  `json:"command"`
				Timeout    *float64 `json:"timeout"`
				TimeoutSec *float64 `json:"timeoutSec"`
				Async      bool     `json:"async"`
			} `json:"hooks"`
		}
		if json.Unmarshal(raw, &groups) != nil {
			continue // not an event list (another settings key)
		}
		for _, g := range groups {
			grp := Group{}
			if g.Matcher != nil {
				grp.Matcher = *g.Matcher
			}
			for _, h := range g.Hooks {
				if h.Type != nil && *h.Type != "command" {
					c.Warnings = append(c.Warnings, fmt.Sprintf("hooks: %s: skipping a %q hook on %s (only command hooks run)", source, *h.Type, name))
					continue
				}
				if h.Command == nil || strings.TrimSpace(*h.Command) == "" {
					continue
				}
				if h.Async {
					c.Warnings = append(c.Warnings, fmt.Sprintf("hooks: %s: skipping an async hook on %s", source, name))
					continue
				}
				hk := Hook{Command: *h.Command, Source: source, Project: project}
				switch {
				case h.Timeout != nil:
					hk.Timeout = *h.Timeout
				case h.TimeoutSec != nil:
					hk.Timeout = *h.TimeoutSec
				}
				if prev := c.duplicate(name, grp.Matcher, hk.Command); prev != nil {
					if prev.Project && !project {
						// The user configured it too: it runs as the
						// user's, whether or not the project is trusted.
						prev.Project, prev.Source = false, source
					}
					continue
				}
				if dupIn(grp.Hooks, hk.Command) {
					continue
				}
				grp.Hooks = append(grp.Hooks, hk)
			}
			if len(grp.Hooks) > 0 {
				c.Events[name] = append(c.Events[name], grp)
			}
		}
	}
}

func dupIn(hs []Hook, cmd string) bool {
	for _, h := range hs {
		if h.Command == cmd {
			return true
		}
	}
	return false
}

// duplicate returns the hook already configured for event with this
// matcher and command, or nil.
func (c *Config) duplicate(event, matcher, cmd string) *Hook {
	for gi := range c.Events[event] {
		g := &c.Events[event][gi]
		if g.Matcher != matcher {
			continue
		}
		for hi := range g.Hooks {
			if g.Hooks[hi].Command == cmd {
				return &g.Hooks[hi]
			}
		}
	}
	return nil
}

var literalMatcher = regexp.MustCompile(`^[A-Za-z0-9_|]+$`)

// Match reports whether a matcher selects subject: empty or "*" matches
// everything; a plain name or "A|B" list matches exactly; anything else is
// an unanchored regular expression (an invalid one matches nothing).
func Match(matcher, subject string) bool {
	if matcher == "" || matcher == "*" {
		return true
	}
	if literalMatcher.MatchString(matcher) {
		for _, alt := range strings.Split(matcher, "|") {
			if alt == subject {
				return true
			}
		}
		return false
	}
	re, err := regexp.Compile(matcher)
	if err != nil {
		return false
	}
	return re.MatchString(subject)
}

// Matching returns the hooks of an event whose matcher selects subject, in
// configuration order, de-duplicated by command.
func (c *Config) Matching(event, subject string, trusted bool) []Hook {
	if c.Disabled || (c.DisabledByProject && trusted) {
		return nil
	}
	var out []Hook
	for _, g := range c.Events[event] {
		if !Match(g.Matcher, subject) {
			continue
		}
		for _, h := range g.Hooks {
			if h.Project && !trusted {
				continue
			}
			if !dupIn(out, h.Command) {
				out = append(out, h)
			}
		}
	}
	return out
}

// Findings reports a dialect's configuration for `dsh doctor`: every
// problem met while reading its files (each also logged and printed at
// start), the hooks that will run, and project hooks held back until the
// project is trusted.
func (c *Config) Findings(trusted bool) []doctor.Finding {
	var out []doctor.Finding
	for _, w := range c.Warnings {
		out = append(out, doctor.Finding{Severity: doctor.Warning, Subject: c.Dialect, Message: strings.TrimPrefix(w, "hooks: ")})
	}
	runs, held := 0, 0
	events := map[string]bool{}
	for ev, gs := range c.Events {
		for _, g := range gs {
			for _, h := range g.Hooks {
				if h.Project && !trusted {
					held++
					continue
				}
				runs++
				events[ev] = true
			}
		}
	}
	switch {
	case c.Disabled || (c.DisabledByProject && trusted):
		out = append(out, doctor.Finding{Severity: doctor.Info, Subject: c.Dialect, Message: "disableAllHooks is set: no hook runs"})
	case runs > 0:
		names := make([]string, 0, len(events))
		for ev := range events {
			names = append(names, ev)
		}
		sort.Strings(names)
		out = append(out, doctor.Finding{Severity: doctor.OK, Subject: c.Dialect, Message: fmt.Sprintf("%d hook(s) run on %s", runs, strings.Join(names, ", "))})
	}
	if held > 0 {
		out = append(out, doctor.Finding{Severity: doctor.Info, Subject: c.Dialect,
			Message: fmt.Sprintf("%d project hook(s) do not run: this project is not trusted", held),
			Fix:     "run dsh here interactively and trust the folder, or pass --trust"})
	}
	return out
}
