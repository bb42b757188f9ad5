package permission

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/settings"
	"github.com/dshq/dsh/tool"
)

// Config is everything a [Checker] starts from. The caller (the app)
// gathers it from the settings layers and flags; [FromSettings] does the
// settings part.
type Config struct {
	// Mode is the starting mode ("" is default).
	Mode Mode
	// ModeSource is the settings layer Mode came from. bypassPermissions
	// from a project or local layer is refused.
	ModeSource settings.Layer
	// Rules are the allow, ask and deny rules with the file each came from.
	Rules []Rule
	// Roots are the workspace directories besides the session cwd
	// (--add-dir, permissions.additionalDirectories). Relative roots are
	// relative to the session cwd; ~ is expanded.
	Roots []string
	// Home expands ~ in rules and roots; empty means the user's home.
	Home string
	// Cwd is the project root used for calls that carry no host (tests,
	// subsystems calling tools directly); empty means the process cwd.
	Cwd string
	// NoBypass, when set, names the settings file whose
	// disableBypassPermissionsMode keeps bypassPermissions from being
	// chosen.
	NoBypass string
}

// Checker decides tool calls: it is the permission layer. Create one per
// running app with [New], attach it to a tool registry with
// [Checker.Install], and drive it from the front-end ([Checker.SetMode],
// [Checker.Rules], [Checker.AddRule]). It is safe for concurrent use.
type Checker struct {
	home     string
	cwd      string
	roots    []string
	noBypass string

	mu       sync.RWMutex
	modes    modeSlot // the checker's mode: every session's unless it has its own
	global   *ruleSet
	sessions map[string]*sessionState
	warnings []string

	reg       atomic.Pointer[tool.Registry]
	sandboxed atomic.Pointer[Sandboxed]
	live      atomic.Pointer[session.Live] // the host's sessions, for roots (Plugin)
	realCache sync.Map                     // directory → its realpath
	decided   decidedFiles

	// ModeChanged fires after every mode switch, so status lines and ACP
	// clients follow the mode when an approved plan changes it.
	ModeChanged *kernel.Signal[ModeChange]
}

// ruleSet is an immutable list of parsed rules, indexed by behavior.
// Changes replace the whole set, so Decide never holds a lock while
// matching.
type ruleSet struct {
	all []*rule
	by  [3][]*rule // indexed by Behavior.strength()
}

func newRuleSet(rules []*rule) *ruleSet {
	rs := &ruleSet{all: rules}
	for _, r := range rules {
		i := r.Behavior.strength()
		rs.by[i] = append(rs.by[i], r)
	}
	return rs
}

// sessionState holds one session's rules: the remembered "allow for this
// session" answers and /permissions additions, recovered from the log on
// resume.
type sessionState struct {
	parent  string
	rules   *ruleSet
	pending []RuleEvent // to record at the session's next step
	// modes is the session's own mode; unset (mode "") it follows its
	// parent's, and a session without a parent follows the checker's.
	modes modeSlot
	// grants are the allow rules of running commands and active skills
	// ([Checker.Grant]).
	grants []*ruleSet
}

// modeSlot is a mode and the mode to return to when a plan made in it is
// approved.
type modeSlot struct {
	mode    Mode
	prePlan Mode
}

// set switches the slot to m, remembering the mode plan mode was entered
// from (from is the mode in force before, which may have been inherited).
func (s *modeSlot) set(m, from Mode) {
	if m == ModePlan && from != ModePlan {
		s.prePlan = from
	}
	s.mode = m
}

// leavePlan switches a slot in plan mode back to the mode the plan was
// entered from.
func (s *modeSlot) leavePlan() Mode {
	to := s.prePlan
	if to == "" || to == ModePlan {
		to = ModeDefault
	}
	s.mode = to
	return to
}

// New parses every rule up front, so a bad rule stops dsh at startup with
// the rule and its file named instead of misbehaving later. All invalid
// rules are reported at once.
//
// A bypassPermissions mode from a project or local layer is downgraded to
// default with a warning (see [Checker.Warnings]) rather than refused:
// refusing would let any repository stop dsh from starting, and ignoring it
// silently would hide an attempted escalation.
func New(cfg Config) (*Checker, error) {
	mode, err := ParseMode(string(cfg.Mode))
	if err != nil {
		return nil, err
	}
	c := &Checker{
		home:        cfg.Home,
		cwd:         cfg.Cwd,
		noBypass:    cfg.NoBypass,
		sessions:    map[string]*sessionState{},
		ModeChanged: kernel.NewSignal[ModeChange]("permission/mode"),
	}
	if mode == ModeBypass && cfg.ModeSource.Project() {
		c.warnings = append(c.warnings, fmt.Sprintf("permission: ignoring defaultMode bypassPermissions from the %s settings: only you can choose it (--permission-mode or your user settings); using default mode", cfg.ModeSource))
		mode = ModeDefault
	}
	if mode == ModeBypass && cfg.NoBypass != "" {
		c.warnings = append(c.warnings, fmt.Sprintf("permission: bypassPermissions is disabled by disableBypassPermissionsMode in %s; using default mode", cfg.NoBypass))
		mode = ModeDefault
	}
	c.modes.mode = mode
	if c.home == "" {
		c.home, _ = os.UserHomeDir()
	}
	if c.cwd == "" {
		c.cwd, _ = os.Getwd()
	}
	var errs []error
	parsed := make([]*rule, 0, len(cfg.Rules))
	for _, r := range cfg.Rules {
		pr, err := parseRule(r, c.home)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		parsed = append(parsed, pr)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	c.global = newRuleSet(parsed)
	for _, root := range cfg.Roots {
		if root == "~" || strings.HasPrefix(root, "~/") {
			root = c.home + root[1:]
		}
		if root != "" {
			c.roots = append(c.roots, filepath.Clean(root))
		}
	}
	return c, nil
}

// Warnings returns what New downgraded or ignored, for the app to show.
func (c *Checker) Warnings() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return slices.Clone(c.warnings)
}

// Mode returns the checker's mode: the mode of every session that has not
// chosen its own (see [Checker.SessionMode]).
func (c *Checker) Mode() Mode {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.modes.mode
}

// SetMode switches the checker's mode at the user's request (shift+tab,
// /permissions mode in the terminal, which runs one session at a time).
// Sessions with a mode of their own keep it. Entering plan mode remembers
// the mode to return to when the plan is approved.
func (c *Checker) SetMode(m Mode) error {
	if err := c.checkMode(m); err != nil {
		return err
	}
	c.mu.Lock()
	from := c.modes.mode
	c.modes.set(m, from)
	c.mu.Unlock()
	c.modeChanged(ModeChange{From: from, To: m, By: "user"})
	return nil
}

// SessionMode returns the mode in force for a session's calls: its own,
// else its nearest ancestor's (a subagent follows the agent that started
// it), else the checker's.
func (c *Checker) SessionMode(sessionID string) Mode {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.sessionModeLocked(sessionID)
}

// SetSessionMode gives one session a mode of its own (ACP session/set_mode:
// an editor's sessions of one workspace each have their own), leaving the
// checker's and other sessions' modes alone. Its subagents follow it.
func (c *Checker) SetSessionMode(sessionID string, m Mode) error {
	if err := c.checkMode(m); err != nil {
		return err
	}
	c.mu.Lock()
	from := c.sessionModeLocked(sessionID)
	c.sessionLocked(sessionID).modes.set(m, from)
	c.mu.Unlock()
	c.modeChanged(ModeChange{Session: sessionID, From: from, To: m, By: "user"})
	return nil
}

// BypassDisabled names the settings file that keeps bypassPermissions
// from being chosen (disableBypassPermissionsMode), or is "" when it may
// be: front-ends do not offer what would be refused.
func (c *Checker) BypassDisabled() string { return c.noBypass }

func (c *Checker) checkMode(m Mode) error {
	if _, err := ParseMode(string(m)); err != nil || m == "" {
		return fmt.Errorf("permission: unknown mode %q", m)
	}
	if m == ModeBypass && c.noBypass != "" {
		return fmt.Errorf("permission: bypassPermissions is disabled (disableBypassPermissionsMode in %s)", c.noBypass)
	}
	return nil
}

func (c *Checker) modeChanged(ch ModeChange) {
	if ch.From != ch.To {
		_ = c.ModeChanged.EmitAll(context.Background(), ch)
	}
}

// modeOwnerLocked returns the slot that decides a session's mode, and the
// session it belongs to ("" and the checker's slot when no session in the
// chain has a mode of its own).
func (c *Checker) modeOwnerLocked(sessionID string) (string, *modeSlot) {
	seen := map[string]bool{}
	for id := sessionID; id != "" && !seen[id] && len(seen) < 8; {
		seen[id] = true
		s, ok := c.sessions[id]
		if !ok {
			break
		}
		if s.modes.mode != "" {
			return id, &s.modes
		}
		id = s.parent
	}
	return "", &c.modes
}

func (c *Checker) sessionModeLocked(sessionID string) Mode {
	_, slot := c.modeOwnerLocked(sessionID)
	return slot.mode
}

// Rules returns the effective rules for a session ("" for none): the
// configured and runtime rules first, then the session's own (and its
// parent's, for subagents), each with the file or "session" it came from.
// This is what /permissions shows.
func (c *Checker) Rules(sessionID string) []Rule {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []Rule
	for _, r := range c.global.all {
		out = append(out, r.Rule)
	}
	for _, s := range c.sessionChainLocked(sessionID) {
		for _, r := range s.rules.all {
			out = append(out, r.Rule)
		}
		for _, g := range s.grants {
			for _, r := range g.all {
				out = append(out, r.Rule)
			}
		}
	}
	return out
}

// AddRule adds a process-wide rule at run time (/permissions add). Source
// names where the front-end persisted it (a settings file path) or "cli".
func (c *Checker) AddRule(r Rule) error {
	pr, err := parseRule(r, c.home)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.global = newRuleSet(append(slices.Clone(c.global.all), pr))
	return nil
}

// RemoveRule removes process-wide rules with this text and behavior (and
// source, when not empty). It reports whether any was removed.
func (c *Checker) RemoveRule(r Rule) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	kept, removed := removeMatching(c.global.all, r)
	if removed {
		c.global = newRuleSet(kept)
	}
	return removed
}

func removeMatching(rules []*rule, r Rule) ([]*rule, bool) {
	text := strings.TrimSpace(r.Text)
	kept := make([]*rule, 0, len(rules))
	for _, x := range rules {
		if x.Text == text && x.Behavior == r.Behavior && (r.Source == "" || x.Source == r.Source) {
			continue
		}
		kept = append(kept, x)
	}
	return kept, len(kept) != len(rules)
}

// sessionChainLocked returns the session's state and its ancestors'.
func (c *Checker) sessionChainLocked(id string) []*sessionState {
	var out []*sessionState
	seen := map[string]bool{}
	for i := 0; i < 8 && !seen[id]; i++ {
		seen[id] = true
		s, ok := c.sessions[id]
		if !ok {
			break
		}
		out = append(out, s)
		if s.parent == "" {
			break
		}
		id = s.parent
	}
	return out
}

// rulesFor returns the rules that apply to calls of a session, by behavior.
func (c *Checker) rulesFor(sessionID string) (Mode, [3][]*rule) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	mode := c.sessionModeLocked(sessionID)
	chain := c.sessionChainLocked(sessionID)
	if len(chain) == 0 {
		return mode, c.global.by
	}
	var by [3][]*rule
	for i := range by {
		by[i] = slices.Clone(c.global.by[i])
		for _, s := range chain {
			by[i] = append(by[i], s.rules.by[i]...)
			for _, g := range s.grants {
				by[i] = append(by[i], g.by[i]...)
			}
		}
	}
	return mode, by
}

// Decision is the permission layer's verdict on one call, with the rule
// and file (or the mode) that made it.
type Decision struct {
	Behavior Behavior
	// Rule and Source name the deciding rule and where it came from; empty
	// when the mode (and the workspace) decided.
	Rule   string
	Source string
	Mode   Mode
	// Reason is for the model and the user: what was decided and why.
	Reason string
	// Suggest lists the rules that would let this call run without asking;
	// they travel with the approval request (tool.Decision.Suggestions), so
	// "allow for this session" accepts them. Empty when no rule can: an ask
	// rule, or a line that cannot be analysed.
	Suggest []string
	// firm: the question holds even when a sandbox confines the command
	// (see sandboxDecision).
	firm bool
	// File is, for read, write and edit, the file decided on: the path
	// resolved through symbolic links when the decision was made. The
	// tool confirms it is the file it opens ([Checker.ConfirmFile]).
	File string
}

// By is the audit name of the decider, as recorded in tool.Decision.By:
// `permission:deny rule "Bash(rm:*)" from /home/u/.dsh/settings.json` or
// `permission:mode acceptEdits`.
func (d Decision) By() string {
	if d.Rule != "" {
		return fmt.Sprintf("permission:%s rule %q from %s", d.Behavior, d.Rule, d.Source)
	}
	return "permission:mode " + string(d.Mode)
}

// Decide decides one call. It is pure apart from resolving symlinks: it
// changes nothing and records nothing, so front-ends may call it to preview
// a decision and benchmarks may call it in a loop. cwd is the session's
// working directory (the project root); "" means the call's host's, then
// Config.Cwd.
func (c *Checker) Decide(ctx context.Context, call tool.Call, cwd string) Decision {
	_, final := c.Explain(ctx, call, cwd)
	return final
}

// Explain decides one call as [Checker.Decide] does and also returns the
// decision before the sandbox had its say (the rules, the mode and the
// parsed command line alone), so `dsh sandbox explain` can show both and
// why they differ.
func (c *Checker) Explain(ctx context.Context, call tool.Call, cwd string) (parser, final Decision) {
	if cwd == "" && call.Host != nil {
		cwd = call.Host.Cwd()
	}
	if cwd == "" {
		cwd = c.cwd
	}
	mode, rules := c.rulesFor(sessionOf(call))
	if forceAllow != nil {
		if reason, ok := forceAllow(call); ok {
			d := Decision{Behavior: Allow, Mode: mode, Reason: reason}
			return d, d
		}
	}
	d := &decider{c: c, mode: mode, rules: rules, cwd: filepath.Clean(cwd), call: call, name: canonical(call.Name)}
	v := d.decide()
	out := Decision{Behavior: v.behavior, Mode: mode, Reason: v.reason, Suggest: v.suggest, File: v.file, firm: v.firm}
	if v.rule != nil {
		out.Rule, out.Source = v.rule.Text, v.rule.Source
	}
	if out.Behavior != Ask {
		out.Suggest = nil
	}
	return out, c.sandboxDecision(ctx, call, mode, out)
}

// realDir resolves a workspace directory once: roots change rarely, and
// resolving them on every call would dominate the cost of a decision.
func (c *Checker) realDir(dir string) string {
	if v, ok := c.realCache.Load(dir); ok {
		return v.(string)
	}
	r := resolve(dir)
	c.realCache.Store(dir, r)
	return r
}
