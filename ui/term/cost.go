package term

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/pricing"
	"github.com/dshq/dsh/sandbox"
	sbplugin "github.com/dshq/dsh/sandbox/plugin"
	"github.com/dshq/dsh/session"
)

// ledger is a session's usage by model and what it cost, priced from the
// app's table (the one the headless result and ACP usage updates read), so
// the footer, /cost and `dsh -p --output-format json` agree.
type ledger struct {
	prices  *pricing.Table
	byModel map[string]*llm.Usage
	order   []string
	cost    pricing.Tally
}

func newLedger(prices *pricing.Table) *ledger {
	return &ledger{prices: prices, byModel: map[string]*llm.Usage{}}
}

func (l *ledger) add(model string, u llm.Usage) {
	m := l.byModel[model]
	if m == nil {
		m = &llm.Usage{}
		l.byModel[model] = m
		l.order = append(l.order, model)
	}
	m.Add(u)
	l.cost.Add(l.prices, model, u)
}

// account adds the usage of stored events that are not rendered (the
// turns a resumed session does not replay) and returns it.
func (l *ledger) account(events []session.Event, fallbackModel string) (sum llm.Usage) {
	for _, e := range events {
		if e.Type != session.TypeAssistantMessage {
			continue
		}
		if m, err := session.Decode[session.AssistantMessage](e); err == nil && m.Usage != nil {
			l.add(cmpOr(m.Model, fallbackModel), *m.Usage)
			sum.Add(*m.Usage)
		}
	}
	return sum
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// costText is the session's cost for the footer: "$0.0123", "≥ $0.01"
// when some usage had no price, "" when nothing was priced.
func (l *ledger) costText() string {
	switch {
	case l.cost.USD == 0 && l.cost.Unpriced, len(l.order) == 0:
		return ""
	case l.cost.Unpriced:
		return "≥ " + pricing.Format(l.cost.USD)
	}
	return pricing.Format(l.cost.USD)
}

// costPiece is the footer's session cost.
func (u *ui) costPiece() string {
	if t := u.tr.ledger.costText(); t != "" {
		return u.st.Dim(t)
	}
	return ""
}

// costReport is /cost: the session's cost and tokens by model.
func (u *ui) costReport() string {
	l := u.tr.ledger
	var b strings.Builder
	turns := fmt.Sprintf("%d %s", u.tr.Turns, plural(u.tr.Turns, "turn", "turns"))
	if len(l.order) == 0 {
		return "this session: " + turns + ", no model calls yet"
	}
	total := pricing.Format(l.cost.USD)
	if l.cost.Unpriced {
		total = "at least " + total
	}
	fmt.Fprintf(&b, "%s this session (%s)\n", u.st.Bold(total), turns)
	models := slices.Clone(l.order)
	for _, m := range models {
		us := *l.byModel[m]
		price, ok := l.prices.Lookup(m)
		cost := u.st.Dim("no price (set one under \"pricing\" in settings)")
		if ok {
			cost = pricing.Format(price.Cost(us))
		}
		fmt.Fprintf(&b, "  %s  %s\n    in %s · out %s · cache read %s · cache write %s\n", u.st.Bold(sanitize(m)), cost,
			fmtTokens(us.InputTokens), fmtTokens(us.OutputTokens), fmtTokens(us.CacheReadTokens), fmtTokens(us.CacheWriteTokens))
		if ok {
			fmt.Fprintf(&b, "%s\n", u.st.Dim(fmt.Sprintf("    per million tokens: $%g in · $%g out · $%g cache read · $%g cache write", price.Input, price.Output, price.CacheRead, price.CacheWrite)))
		}
	}
	b.WriteString(u.st.Dim("estimates from list prices (settings \"pricing\" overrides them); the provider's bill is what counts"))
	return b.String()
}

// sandboxMsg reports the sandbox's status, probed off the UI goroutine.
type sandboxMsg struct{ status sandbox.Status }

// probeSandbox learns whether the sandbox enforces (the probe starts a
// helper process, so it runs in the background once the prompt is up).
func (u *ui) probeSandbox() {
	svc, ok := core.Lookup[*sbplugin.Service](u.app.Host)
	if !ok {
		return
	}
	go func() { u.q.push(sandboxMsg{status: svc.Status()}) }()
}

// sandboxPiece names the mode commands run in: "sandbox: workspace-write",
// or a warning when the sandbox is not enforcing (commands then ask).
func (u *ui) sandboxPiece() string {
	svc, ok := core.Lookup[*sbplugin.Service](u.app.Host)
	if !ok {
		return ""
	}
	var id string
	if c := u.cur.Load(); c != nil {
		id = string(c.sess.ID())
	}
	mode := svc.Mode(id)
	switch {
	case mode == sandbox.ModeFullAccess:
		return u.st.Warn("no sandbox")
	case u.sandbox == nil:
		return u.st.Dim("sandbox: " + string(mode))
	case !u.sandbox.Enforcing:
		return u.st.Warn("sandbox unavailable")
	}
	return u.st.Dim("sandbox: " + string(mode))
}
