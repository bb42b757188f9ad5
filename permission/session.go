package permission

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/dshq/dsh/internal/ownership"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

// Session event types the permission layer records. They are plugin events:
// not on the surface, appended inside the open turn.
const (
	// EventRule records a session rule: an "allow for this session"
	// answer, or a /permissions change. Replaying them in order rebuilds
	// the session's rules on resume.
	EventRule = "permission/rule"
	// EventDecision records each decision the permission layer made, with
	// the rule and file behind it. It lands just before the call's
	// tool/call event (the loop appends tool/call after the gate).
	EventDecision = "permission/decision"
	// EventMode records a mode switch caused inside a turn (an approved
	// plan).
	EventMode = "permission/mode"
)

// A session resumed from a snapshot holds its rule events, so the rules
// are restored without reading the whole log back.
func init() { session.KeepOnResume(EventRule) }

// RuleEvent is the payload of permission/rule.
type RuleEvent struct {
	Rule     string   `json:"rule"`
	Behavior Behavior `json:"behavior"`
	Source   string   `json:"source"`
	// Removed withdraws an earlier rule with the same text and behavior.
	Removed bool `json:"removed,omitempty"`
}

// DecisionEvent is the payload of permission/decision.
type DecisionEvent struct {
	CallID   llm.CallID `json:"callId"`
	Tool     string     `json:"tool"`
	Behavior Behavior   `json:"behavior"`
	Rule     string     `json:"rule,omitempty"`
	Source   string     `json:"source,omitempty"`
	Mode     Mode       `json:"mode"`
	Reason   string     `json:"reason,omitempty"`
}

// ModeEvent is the payload of permission/mode.
type ModeEvent struct {
	Mode     Mode   `json:"mode"`
	Previous Mode   `json:"previous"`
	By       string `json:"by"`
}

// writer records the checker's events: permission/* belongs to the checker,
// so a tool cannot forge a session rule that a resumed session would grant.
func writer(s *session.Session) session.Writer { return s.Writer(ownership.Permissions) }

// appendFor records a permission event in the session of call. A host
// that is an agent is written through the checker's own writer (its tool
// Append refuses permission/*); any other host records it itself.
func appendFor(ctx context.Context, call tool.Call, typ string, data any) error {
	switch h := call.Host.(type) {
	case nil:
		return nil
	case interface{ Session() *session.Session }:
		_, err := writer(h.Session()).Append(ctx, typ, data)
		return err
	default:
		return h.Append(ctx, typ, data)
	}
}

// SessionRules replays a session log's permission/rule events into the
// session's rules, in order (a removal withdraws what came before it).
// Events that do not decode are skipped: a damaged entry must not stop a
// session from resuming, and skipping only ever asks more.
func SessionRules(events []session.Event) []Rule {
	var out []Rule
	for _, e := range events {
		if e.Type != EventRule {
			continue
		}
		ev, err := session.Decode[RuleEvent](e)
		if err != nil || !ev.Behavior.valid() {
			continue
		}
		r := Rule{Text: ev.Rule, Behavior: ev.Behavior, Source: SourceSession}
		out = slices.DeleteFunc(out, func(x Rule) bool { return x.Text == r.Text && x.Behavior == r.Behavior })
		if !ev.Removed {
			out = append(out, r)
		}
	}
	return out
}

// RestoreSession installs a session's rules from its log (resume, fork).
// parent links a subagent's session to its parent's, whose rules it
// inherits. Invalid recorded rules are skipped and reported.
func (c *Checker) RestoreSession(id, parent string, events []session.Event) error {
	var errs []error
	var parsed []*rule
	for _, r := range SessionRules(events) {
		pr, err := parseRule(r, c.home)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		parsed = append(parsed, pr)
	}
	c.mu.Lock()
	s := c.sessionLocked(id)
	s.parent = parent
	s.rules = newRuleSet(parsed)
	c.mu.Unlock()
	return errors.Join(errs...)
}

// ForgetSession drops a session's in-memory rules (its agent is gone; the
// log keeps them for a resume).
func (c *Checker) ForgetSession(id string) {
	c.mu.Lock()
	delete(c.sessions, id)
	c.mu.Unlock()
}

func (c *Checker) sessionLocked(id string) *sessionState {
	s, ok := c.sessions[id]
	if !ok {
		s = &sessionState{rules: newRuleSet(nil)}
		c.sessions[id] = s
	}
	return s
}

// AddSessionRule adds a rule to one session (/permissions add, session
// scope) and records it in the session's log: at once when a turn is open,
// otherwise at the session's next step, since every event must lie inside
// a turn. s may be nil for calls made outside any session.
func (c *Checker) AddSessionRule(ctx context.Context, s *session.Session, r Rule) error {
	r.Source = SourceSession
	pr, err := parseRule(r, c.home)
	if err != nil {
		return err
	}
	id := ""
	if s != nil {
		id = string(s.ID())
	}
	c.mu.Lock()
	st := c.sessionLocked(id)
	kept, _ := removeMatching(st.rules.all, r)
	st.rules = newRuleSet(append(kept, pr))
	c.mu.Unlock()
	return c.record(ctx, s, RuleEvent{Rule: pr.Text, Behavior: r.Behavior, Source: SourceSession})
}

// RemoveSessionRule withdraws a session rule and records the removal. It
// reports whether the session had the rule.
func (c *Checker) RemoveSessionRule(ctx context.Context, s *session.Session, r Rule) (bool, error) {
	id := ""
	if s != nil {
		id = string(s.ID())
	}
	c.mu.Lock()
	st, ok := c.sessions[id]
	removed := false
	if ok {
		var kept []*rule
		kept, removed = removeMatching(st.rules.all, Rule{Text: r.Text, Behavior: r.Behavior})
		st.rules = newRuleSet(kept)
	}
	c.mu.Unlock()
	if !removed {
		return false, nil
	}
	return true, c.record(ctx, s, RuleEvent{Rule: r.Text, Behavior: r.Behavior, Source: SourceSession, Removed: true})
}

// record appends a rule event inside the open turn, or queues it for the
// session's next step.
func (c *Checker) record(ctx context.Context, s *session.Session, ev RuleEvent) error {
	if s == nil {
		return nil
	}
	_, err := writer(s).AppendIf(ctx, func(ts session.TurnState) bool { return ts.Open }, EventRule, ev, nil)
	if errors.Is(err, session.ErrCondition) {
		c.mu.Lock()
		st := c.sessionLocked(string(s.ID()))
		st.pending = append(st.pending, ev)
		c.mu.Unlock()
		return nil
	}
	if err != nil {
		return fmt.Errorf("permission: recording %s: %w", ev.Rule, err)
	}
	return nil
}

// flushPending records queued rule events; the turn is open (pre-step).
func (c *Checker) flushPending(ctx context.Context, s *session.Session) error {
	c.mu.Lock()
	st, ok := c.sessions[string(s.ID())]
	var pending []RuleEvent
	if ok {
		pending, st.pending = st.pending, nil
	}
	c.mu.Unlock()
	var errs []error
	for _, ev := range pending {
		if _, err := writer(s).Append(ctx, EventRule, ev); err != nil {
			errs = append(errs, fmt.Errorf("permission: recording %s: %w", ev.Rule, err))
		}
	}
	return errors.Join(errs...)
}

// remember adds the rules an approval answer accepted to a session. A
// rule that does not parse is skipped and reported (asking again is the
// safe outcome).
func (c *Checker) remember(id string, texts []string, b Behavior) ([]*rule, error) {
	var added []*rule
	var errs []error
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.sessionLocked(id)
	all := slices.Clone(st.rules.all)
	for _, t := range texts {
		pr, err := parseRule(Rule{Text: t, Behavior: b, Source: SourceSession}, c.home)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		all, _ = removeMatching(all, pr.Rule)
		all = append(all, pr)
		added = append(added, pr)
	}
	st.rules = newRuleSet(all)
	return added, errors.Join(errs...)
}
