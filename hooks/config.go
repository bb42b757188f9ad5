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
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/dshq/dsh/doctor"
)

// Dialect names.
const (
	Claude = "claude"
	Codex  = "codex"
)

// Default timeouts. A hook's own "timeout" (seconds) replaces them.
const (
	// DefaultTimeoutSeconds bounds a command hook, as Claude Code's
	// documentation long stated; a hung hook must not freeze a session.
	DefaultTimeoutSeconds = 60
	// PromptSubmitTimeoutSeconds bounds UserPromptSubmit command hooks,
	// which hold up every prompt (Claude Code's default there).
	PromptSubmitTimeoutSeconds = 30
	// PromptHookTimeoutSeconds bounds a prompt hook's model call.
	PromptHookTimeoutSeconds = 30
	// SessionEndTimeoutSeconds bounds SessionEnd hooks without their own
	// timeout: the session is over and the user is waiting for dsh to
	// exit (Claude Code allows 1.5 s).
	SessionEndTimeoutSeconds = 1.5
	// MaxSessionEndTimeoutSeconds caps even a configured SessionEnd timeout.
	MaxSessionEndTimeoutSeconds = 60
)

// Hook types dsh runs.
const (
	TypeCommand = "command"
	TypePrompt  = "prompt"
)

// Hook is one configured hook: a command (run through the shell with the
// payload on stdin) or a prompt (evaluated by a model call).
type Hook struct {
	// Type is TypeCommand or TypePrompt.
	Type    string
	Command string
	// Prompt is a prompt hook's text ($ARGUMENTS is replaced by the
	// payload); Model the model it names (empty: the session's).
	Prompt string
	Model  string
	// ContinueOnBlock makes a prompt hook's "ok": false feed its reason
	// back to the model instead of ending the turn (PreToolUse,
	// PostToolUse).
	ContinueOnBlock bool
	// Async command hooks run in the background: they never block or
	// decide; their context and system message reach the model later.
	Async   bool
	Timeout float64 // seconds; 0 = the event's default
	// Source is the file the hook came from.
	Source string
	// Project is true for hooks from a project directory (they need trust).
	Project bool
	// Env is added to the command's environment: a plugin bundle's hooks
	// get CLAUDE_PLUGIN_ROOT.
	Env map[string]string
	// Func, when set, is an in-process hook (a Claude Agent SDK callback
	// registered over the control protocol): it receives the payload a
	// command hook reads on stdin and answers with the JSON a command hook
	// prints. Command then only names it in logs and records.
	Func func(ctx context.Context, payload []byte) (json.RawMessage, error)
	// BlockOnFailure makes a Func that fails (or times out) block, as the
	// SDK's onFailure: "block" asks; otherwise a failure is a non-blocking
	// error, like a command hook's non-zero exit.
	BlockOnFailure bool
}

// Label names a hook in messages: its command or prompt, shortened.
func (h Hook) Label() string {
	s := h.Command
	if h.Type == TypePrompt {
		s = "prompt: " + h.Prompt
	}
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 60 {
		s = string(r[:59]) + "…"
	}
	return s
}

// key identifies a hook for de-duplication: the same handler configured
// twice runs once.
func (h Hook) key() string {
	if h.Type == TypePrompt {
		return "prompt\x00" + h.Prompt + "\x00" + h.Model
	}
	k := "command\x00" + h.Command
	// The same command text in two plugins is two hooks: each runs with
	// its own plugin's directory.
	for _, name := range slices.Sorted(maps.Keys(h.Env)) {
		k += "\x00" + name + "=" + h.Env[name]
	}
	return k
}

// promptEvents are the events on which prompt hooks run (Claude Code
// runs them on the decision events only).
var promptEvents = map[string]bool{
	"PreToolUse": true, "PostToolUse": true, "PostToolUseFailure": true, "PermissionRequest": true,
	"UserPromptSubmit": true, "Stop": true, "SubagentStop": true,
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
// .claude/settings.local.json; Codex reads ~/.codex/hooks.json,
// ~/.codex/config.toml, .codex/hooks.json and .codex/config.toml (whose
// [hooks] tables have hooks.json's shape). userHome is the user's home
// directory.
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
			user = append(user, filepath.Join(userHome, ".codex", "hooks.json"), filepath.Join(userHome, ".codex", "config.toml"))
		}
		if project != "" {
			proj = append(proj, filepath.Join(project, ".codex", "hooks.json"), filepath.Join(project, ".codex", "config.toml"))
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
	c.add(source, b, project, nil)
}

// Extra is how other capabilities add hook documents (plugin bundles'
// hooks/hooks.json): a function of the working directory, provided on the
// host before the hooks plugin installs. Hooks of the Claude Code dialect.
type Extra func(cwd string) []ExtraFile

// ExtraFile is one hook document in Claude Code's settings format.
type ExtraFile struct {
	Source string
	JSON   []byte
	// Project marks hooks that need the project's trust.
	Project bool
	// Env is added to each of its hooks' environment.
	Env map[string]string
}

// AddExtra merges a hook document another capability found.
func (c *Config) AddExtra(f ExtraFile) {
	c.add(f.Source, f.JSON, f.Project, f.Env)
}

func (c *Config) addFile(path string, project bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.Warnings = append(c.Warnings, fmt.Sprintf("hooks: cannot read %s: %v", path, err))
		}
		return
	}
	if strings.HasSuffix(path, ".toml") {
		if b, err = tomlHooks(b); err != nil {
			c.Warnings = append(c.Warnings, fmt.Sprintf("hooks: %s is not valid TOML: %v", path, err))
			return
		}
		if b == nil {
			return // a config.toml without hooks
		}
	}
	c.add(path, b, project, nil)
}

// tomlHooks turns a Codex config.toml into the JSON of its hooks: the
// [hooks] tables ([[hooks.PreToolUse]] groups with [[hooks.PreToolUse.hooks]]
// handlers) are hooks.json's document in TOML. [hooks.state] is Codex's
// own bookkeeping, not an event (it is left out by add, which skips what
// is not a list of groups). nil: the file has no hooks.
func tomlHooks(b []byte) ([]byte, error) {
	var doc struct {
		Hooks map[string]any `toml:"hooks"`
	}
	if err := toml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	if len(doc.Hooks) == 0 {
		return nil, nil
	}
	return json.Marshal(map[string]any{"hooks": doc.Hooks})
}

func (c *Config) add(source string, b []byte, project bool, env map[string]string) {
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
				Type            *string  `json:"type"`
				Command         *string  `json:"command"`
				Args            []string `json:"args"`
				Prompt          *string  `json:"prompt"`
				Model           string   `json:"model"`
				Timeout         *float64 `json:"timeout"`
				TimeoutSec      *float64 `json:"timeoutSec"`
				Async           bool     `json:"async"`
				AsyncRewake     bool     `json:"asyncRewake"`
				ContinueOnBlock bool     `json:"continueOnBlock"`
				If              *string  `json:"if"`
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
				typ := TypeCommand
				if h.Type != nil {
					typ = *h.Type
				}
				hk := Hook{Type: typ, Source: source, Project: project, Env: env, Model: h.Model, ContinueOnBlock: h.ContinueOnBlock,
					Async: h.Async || h.AsyncRewake}
				switch typ {
				case TypeCommand:
					if h.Command == nil || strings.TrimSpace(*h.Command) == "" {
						c.warnf("%s: a command hook on %s has no command; it is skipped", source, name)
						continue
					}
					hk.Command = *h.Command
					if len(h.Args) > 0 {
						// Exec form: the executable and its arguments, each
						// one word, whatever it contains.
						words := []string{shellQuote(*h.Command)}
						for _, a := range h.Args {
							words = append(words, shellQuote(a))
						}
						hk.Command = strings.Join(words, " ")
					}
				case TypePrompt:
					if h.Prompt == nil || strings.TrimSpace(*h.Prompt) == "" {
						c.warnf("%s: a prompt hook on %s has no prompt; it is skipped", source, name)
						continue
					}
					if !promptEvents[name] {
						c.warnf("%s: a prompt hook on %s is skipped: prompt hooks run only on PreToolUse, PostToolUse, PostToolUseFailure, PermissionRequest, UserPromptSubmit, Stop and SubagentStop", source, name)
						continue
					}
					hk.Prompt = *h.Prompt
				default:
					c.warnf("%s: a %q hook on %s is not supported by dsh (it runs command and prompt hooks); it is skipped", source, typ, name)
					continue
				}
				if hk.Async && typ != TypeCommand {
					c.warnf("%s: \"async\" applies to command hooks only; the %s hook on %s runs synchronously", source, typ, name)
					hk.Async = false
				}
				if h.AsyncRewake {
					c.warnf("%s: \"asyncRewake\" on %s is not supported; the hook runs in the background like \"async\"", source, name)
				}
				if h.If != nil {
					c.warnf("%s: the \"if\" filter of a hook on %s is not supported; the hook runs whenever its matcher matches", source, name)
				}
				switch {
				case h.Timeout != nil:
					hk.Timeout = *h.Timeout
				case h.TimeoutSec != nil:
					hk.Timeout = *h.TimeoutSec
				}
				if prev := c.duplicate(name, grp.Matcher, hk.key()); prev != nil {
					if prev.Project && !project {
						// The user configured it too: it runs as the
						// user's, whether or not the project is trusted.
						prev.Project, prev.Source = false, source
					}
					continue
				}
				if dupIn(grp.Hooks, hk.key()) {
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

func (c *Config) warnf(format string, args ...any) {
	c.Warnings = append(c.Warnings, "hooks: "+fmt.Sprintf(format, args...))
}

// shellQuote quotes a word for bash.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:@%+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func dupIn(hs []Hook, key string) bool {
	for _, h := range hs {
		if h.key() == key {
			return true
		}
	}
	return false
}

// duplicate returns the hook already configured for event with this
// matcher and key, or nil.
func (c *Config) duplicate(event, matcher, key string) *Hook {
	for gi := range c.Events[event] {
		g := &c.Events[event][gi]
		if g.Matcher != matcher {
			continue
		}
		for hi := range g.Hooks {
			if g.Hooks[hi].key() == key {
				return &g.Hooks[hi]
			}
		}
	}
	return nil
}

// literalMatcher is Claude Code's exact-match set: letters, digits, "_",
// "-", spaces, "," and "|".
var literalMatcher = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_|, -]+$`) })

// Match reports whether a matcher selects one of subjects (a name and its
// aliases: Agent and Task, apply_patch and Edit): empty or "*" matches
// everything; a plain name or a list of names separated by "|" or ","
// matches exactly; anything else is an unanchored regular expression (an
// invalid one matches nothing).
func Match(matcher string, subjects ...string) bool {
	if matcher == "" || matcher == "*" {
		return true
	}
	if literalMatcher().MatchString(matcher) {
		for _, alt := range strings.FieldsFunc(matcher, func(r rune) bool { return r == '|' || r == ',' }) {
			alt = strings.TrimSpace(alt)
			for _, s := range subjects {
				if alt == s {
					return true
				}
			}
		}
		return false
	}
	re, err := regexp.Compile(matcher)
	if err != nil {
		return false
	}
	for _, s := range subjects {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// Matching returns the hooks of an event whose matcher selects one of
// subjects, in configuration order, de-duplicated.
func (c *Config) Matching(event string, trusted bool, subjects ...string) []Hook {
	if c.Disabled || (c.DisabledByProject && trusted) {
		return nil
	}
	var out []Hook
	for _, g := range c.Events[event] {
		if !Match(g.Matcher, subjects...) {
			continue
		}
		for _, h := range g.Hooks {
			if h.Project && !trusted {
				continue
			}
			if !dupIn(out, h.key()) {
				out = append(out, h)
			}
		}
	}
	return out
}

// timeout is the hook's effective timeout on event.
func (h Hook) timeout(event string) time.Duration {
	sec := h.Timeout
	switch {
	case sec > 0 && event == "SessionEnd":
		sec = min(sec, MaxSessionEndTimeoutSeconds)
	case sec > 0:
	case h.Type == TypePrompt:
		sec = PromptHookTimeoutSeconds
	case event == "SessionEnd":
		sec = SessionEndTimeoutSeconds
	case event == "UserPromptSubmit":
		sec = PromptSubmitTimeoutSeconds
	default:
		sec = DefaultTimeoutSeconds
	}
	return time.Duration(sec * float64(time.Second))
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
