package permission

import (
	"errors"
	"slices"
	"sync"
)

// Grant allows rules for one session, and the subagents it starts, until
// release is called: a slash command's allowed-tools for the turn it
// runs in, an active skill's while it is active. A grant adds allow rules
// like any other, named by source ("command /review"), so a deny or ask
// rule still beats it and plan mode still refuses what changes things. It
// is not recorded as a permission/rule event: the command or skill that
// made it is in the log, and a resumed session has no grant until it runs
// one again. Every rule must parse, or nothing is granted.
func (c *Checker) Grant(sessionID, source string, rules []string) (release func(), err error) {
	parsed := make([]*rule, 0, len(rules))
	var errs []error
	for _, text := range rules {
		pr, err := parseRule(Rule{Text: text, Behavior: Allow, Source: source}, c.home)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		parsed = append(parsed, pr)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	g := newRuleSet(parsed)
	c.mu.Lock()
	st := c.sessionLocked(sessionID)
	st.grants = append(st.grants, g)
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if st, ok := c.sessions[sessionID]; ok {
				st.grants = slices.DeleteFunc(st.grants, func(x *ruleSet) bool { return x == g })
			}
		})
	}, nil
}
