package permission

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dshq/dsh/internal/ownership"
	"github.com/dshq/dsh/settings"

	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/prompt"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

// fakeTool counts its runs.
type fakeTool struct {
	info tool.Info
	runs atomic.Int32
}

func (f *fakeTool) Info() tool.Info { return f.info }
func (f *fakeTool) Run(context.Context, tool.Call) (tool.Result, error) {
	f.runs.Add(1)
	return tool.TextResult("ran " + f.info.Name), nil
}

func fake(name string, kind tool.Kind, readOnly bool) *fakeTool {
	return &fakeTool{info: tool.Info{Name: name, Kind: kind, ReadOnly: readOnly, Parameters: json.RawMessage(`{"type":"object"}`)}}
}

type rig struct {
	t     *testing.T
	c     *Checker
	reg   *tool.Registry
	pb    *prompt.Builder
	scope *kernel.Scope
	host  *fakeHost
	tools map[string]*fakeTool
	env   env
}

func newRig(t *testing.T, cfg Config) *rig {
	t.Helper()
	e := newEnv(t)
	cfg.Home, cfg.Cwd = e.home, e.root
	r := &rig{t: t, c: mustNew(t, cfg), reg: tool.NewRegistry(), pb: prompt.New(), scope: kernel.NewScope("test"), env: e,
		host: &fakeHost{cwd: e.root, sid: "s1", scope: kernel.NewScope("agent")}, tools: map[string]*fakeTool{}}
	for _, f := range []*fakeTool{fake("bash", tool.KindExecute, false), fake("read", tool.KindRead, true), fake("edit", tool.KindEdit, false),
		fake("lookup", tool.KindSearch, true), fake("deploy", tool.KindOther, false)} {
		r.tools[f.info.Name] = f
		if _, err := r.reg.Register(f); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = r.scope.Close() })
	return r
}

func (r *rig) install() {
	r.t.Helper()
	if err := r.c.Install(r.scope, r.reg, r.pb, nil); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) exec(name string, args any, ap tool.Approver) tool.Outcome {
	c := call(name, args)
	c.Host = r.host
	return r.reg.Execute(context.Background(), c, tool.ExecOptions{Approver: ap})
}

// approver answers every question the same way and counts them.
type approver struct {
	answer tool.Approval
	// session answers "allow for this session": the answer carries the
	// rules the request suggested.
	session bool
	asked   []tool.ApprovalRequest
}

func (a *approver) Approve(_ context.Context, req tool.ApprovalRequest) (tool.Approval, error) {
	a.asked = append(a.asked, req)
	ans := a.answer
	if a.session {
		ans.Rules = req.Suggestions
	}
	return ans, nil
}

func TestInstallDenyAskAllow(t *testing.T) {
	r := newRig(t, Config{Rules: append(rules(Deny, "/p/.dsh/settings.json", "Bash(rm:*)"), rules(Allow, "/u/settings.json", "Bash(git status:*)")...)})
	r.install()
	ap := &approver{answer: tool.Approval{Allow: true, By: "user"}}

	out := r.exec("bash", map[string]string{"command": "git status && rm -rf build"}, ap)
	if !out.Result.IsError || out.Decision.Kind != tool.Deny || r.tools["bash"].runs.Load() != 0 || len(ap.asked) != 0 {
		t.Fatalf("deny: %+v", out)
	}
	if want := `permission:deny rule "Bash(rm:*)" from /p/.dsh/settings.json`; out.Decision.By != want {
		t.Errorf("By = %q, want %q", out.Decision.By, want)
	}
	if text := out.Result.Content[0].Text; !strings.Contains(text, `permission rule Bash(rm:*) from /p/.dsh/settings.json denies "rm -rf build"`) {
		t.Errorf("the model reads %q", text)
	}

	out = r.exec("bash", map[string]string{"command": "git status"}, ap)
	if out.Result.IsError || r.tools["bash"].runs.Load() != 1 || len(ap.asked) != 0 {
		t.Fatalf("allow: %+v", out)
	}

	out = r.exec("bash", map[string]string{"command": "make"}, ap)
	if out.Decision.Kind != tool.Ask || len(ap.asked) != 1 || r.tools["bash"].runs.Load() != 2 {
		t.Fatalf("ask: %+v", out)
	}
	if !strings.Contains(ap.asked[0].Reason, `"make" is not allowed`) {
		t.Errorf("the approver reads %q", ap.asked[0].Reason)
	}

	// No approver: ask fails closed.
	out = r.exec("bash", map[string]string{"command": "make"}, nil)
	if !out.Result.IsError || r.tools["bash"].runs.Load() != 2 {
		t.Fatalf("no approver: %+v", out)
	}

	// Every decision is recorded with its rule and mode.
	evs := r.host.ofType(EventDecision)
	if len(evs) != 4 {
		t.Fatalf("%d decision events", len(evs))
	}
	first := evs[0].(DecisionEvent)
	if first.Behavior != Deny || first.Rule != "Bash(rm:*)" || first.Source != "/p/.dsh/settings.json" || first.Mode != ModeDefault || first.CallID != "c1" || first.Tool != "bash" {
		t.Errorf("%+v", first)
	}
}

func TestInstallUnknownTools(t *testing.T) {
	r := newRig(t, Config{})
	r.install()
	ap := &approver{answer: tool.Approval{Allow: true}}
	if out := r.exec("lookup", map[string]string{}, ap); out.Result.IsError || len(ap.asked) != 0 {
		t.Errorf("read-only plugin tool: %+v", out)
	}
	if out := r.exec("deploy", map[string]string{}, ap); out.Decision.Kind != tool.Ask || len(ap.asked) != 1 {
		t.Errorf("state-changing plugin tool: %+v", out)
	}
	if out := r.exec("nosuch", map[string]string{}, ap); !out.Result.IsError || len(ap.asked) != 1 || out.Error == nil || out.Error.Code != "UNKNOWN_TOOL" {
		t.Errorf("a call to no tool must not reach the approver: %+v", out)
	}
	if err := r.c.SetMode(ModePlan); err != nil {
		t.Fatal(err)
	}
	if out := r.exec("deploy", map[string]string{}, ap); out.Decision.Kind != tool.Deny {
		t.Errorf("plan mode: %+v", out)
	}
}

func TestHooksTightenButNeverLoosen(t *testing.T) {
	r := newRig(t, Config{Rules: append(rules(Deny, "d", "Bash(rm:*)"), rules(Allow, "a", "Bash(git status)")...)})
	// Inner listeners: registered before Install, which prepends itself.
	var mode atomic.Value
	r.reg.PreExecute.Use(func(ctx context.Context, c tool.Call, next kernel.Next[tool.Call, tool.Decision]) (tool.Decision, error) {
		switch mode.Load() {
		case "ask":
			return tool.Decision{Kind: tool.Ask, Reason: "the hook wants to see this", By: "hook"}, nil
		case "allow":
			return tool.Decision{Kind: tool.Allow, By: "hook"}, nil
		case "rewrite":
			return tool.Decision{Kind: tool.Allow, Args: json.RawMessage(`{"command":"rm -rf /"}`), By: "rewriter"}, nil
		}
		return next(ctx, c)
	})
	r.install()
	ap := &approver{answer: tool.Approval{Allow: true}}

	mode.Store("ask")
	out := r.exec("bash", map[string]string{"command": "git status"}, ap)
	if out.Decision.Kind != tool.Ask || out.Decision.Reason != "the hook wants to see this" {
		t.Errorf("a hook may ask: %+v", out.Decision)
	}
	mode.Store("allow")
	out = r.exec("bash", map[string]string{"command": "make"}, ap)
	if out.Decision.Kind != tool.Ask {
		t.Errorf("a hook's allow must not skip the question: %+v", out.Decision)
	}
	mode.Store("rewrite")
	out = r.exec("bash", map[string]string{"command": "git status"}, ap)
	if out.Decision.Kind != tool.Deny || out.Decision.By != "rewriter" || r.tools["bash"].runs.Load() != 2 {
		t.Errorf("rewritten arguments are decided (and the rewriter still named): %+v", out.Decision)
	}
}

func TestRememberedApprovalsBecomeSessionRules(t *testing.T) {
	r := newRig(t, Config{})
	r.install()
	ap := &approver{answer: tool.Approval{Allow: true, By: "user"}, session: true}
	r.exec("bash", map[string]string{"command": "make test && go vet ./..."}, ap)
	if got := ap.asked[0].Suggestions; len(got) != 2 || got[0] != "Bash(make test)" {
		t.Fatalf("the request carries the suggested rules: %q", got)
	}
	r.exec("bash", map[string]string{"command": "make test && go vet ./..."}, ap)
	if len(ap.asked) != 1 {
		t.Fatalf("asked %d times; a remembered answer must not ask again", len(ap.asked))
	}
	// Each simple command was remembered on its own.
	r.exec("bash", map[string]string{"command": "go vet ./..."}, ap)
	if len(ap.asked) != 1 {
		t.Fatalf("asked again for a remembered simple command")
	}
	ruleEvents := r.host.ofType(EventRule)
	if len(ruleEvents) != 2 {
		t.Fatalf("rule events %+v", ruleEvents)
	}
	if ev := ruleEvents[0].(RuleEvent); ev != (RuleEvent{Rule: "Bash(make test)", Behavior: Allow, Source: SourceSession}) {
		t.Errorf("%+v", ev)
	}
	got := r.c.Rules("s1")
	if len(got) != 2 || got[1] != (Rule{"Bash(go vet:*)", Allow, SourceSession}) {
		t.Errorf("Rules(s1) = %v", got)
	}
	if len(r.c.Rules("other")) != 0 {
		t.Error("session rules leaked into another session")
	}
	// A denial for this call only is not remembered.
	ap.answer, ap.session = tool.Approval{Allow: false}, false
	r.exec("edit", map[string]string{"file_path": "a.go"}, ap)
	if len(r.host.ofType(EventRule)) != 2 {
		t.Error("a one-off denial was remembered")
	}
	// A denial carrying rules ("always reject") records deny rules: the
	// next call is refused without asking.
	ap.answer = tool.Approval{Allow: false, Rules: []string{"edit"}}
	r.exec("edit", map[string]string{"file_path": "a.go"}, ap)
	asked := len(ap.asked)
	if out := r.exec("edit", map[string]string{"file_path": "b.go"}, ap); out.Decision.Kind != tool.Deny || len(ap.asked) != asked {
		t.Errorf("after always reject: %+v, asked %d times", out.Decision, len(ap.asked)-asked)
	}
	if evs := r.host.ofType(EventRule); len(evs) != 3 || evs[2].(RuleEvent) != (RuleEvent{Rule: "edit", Behavior: Deny, Source: SourceSession}) {
		t.Errorf("rule events %+v", evs)
	}
	ruleEvents = r.host.ofType(EventRule)[:2]

	// The log replays into the same rules: a resumed session keeps them.
	var events []session.Event
	for i, data := range ruleEvents {
		b, _ := json.Marshal(data)
		events = append(events, session.Event{Type: EventRule, Seq: int64(i), Data: b})
	}
	sr := SessionRules(events)
	if len(sr) != 2 || sr[0].Text != "Bash(make test)" || sr[0].Source != SourceSession {
		t.Fatalf("SessionRules = %v", sr)
	}
	fresh := mustNew(t, Config{Home: r.env.home, Cwd: r.env.root})
	if err := fresh.RestoreSession("s1", "", events); err != nil {
		t.Fatal(err)
	}
	c := bashCall("make test && go vet ./...")
	c.Host = r.host
	if d := fresh.Decide(context.Background(), c, ""); d.Behavior != Allow || d.Source != SourceSession {
		t.Errorf("after restore: %+v", d)
	}
}

func TestSessionRulesReplayRemovals(t *testing.T) {
	ev := func(seq int64, data string) session.Event {
		return session.Event{Type: EventRule, Seq: seq, Data: json.RawMessage(data)}
	}
	events := []session.Event{
		ev(0, `{"rule":"Bash(a)","behavior":"allow","source":"session"}`),
		ev(1, `{"rule":"Bash(b)","behavior":"allow","source":"session"}`),
		{Type: "tool/call", Seq: 2, Data: json.RawMessage(`{}`)},
		ev(3, `{"rule":"Bash(a)","behavior":"allow","source":"session","removed":true}`),
		ev(4, `not json`),
		ev(5, `{"rule":"Bash(c)","behavior":"sometimes","source":"session"}`),
		ev(6, `{"rule":"Bash(d)","behavior":"deny","source":"session"}`),
	}
	got := SessionRules(events)
	if len(got) != 2 || got[0].Text != "Bash(b)" || got[1] != (Rule{"Bash(d)", Deny, SourceSession}) {
		t.Errorf("%v", got)
	}
}

func TestAddSessionRuleRecordsInsideATurn(t *testing.T) {
	e := newEnv(t)
	c := mustNew(t, Config{Home: e.home, Cwd: e.root})
	s, err := session.New("s1", session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// No turn is open: the rule applies at once and is recorded later.
	if err := c.AddSessionRule(ctx, s, Rule{Text: "Bash(make:*)", Behavior: Allow}); err != nil {
		t.Fatal(err)
	}
	if s.Len() != 0 {
		t.Fatalf("recorded outside a turn")
	}
	h := &fakeHost{cwd: e.root, sid: "s1"}
	in := bashCall("make all")
	in.Host = h
	if d := c.Decide(ctx, in, ""); d.Behavior != Allow {
		t.Errorf("%+v", d)
	}
	if _, err := s.Writer(ownership.Fixtures).Append(ctx, session.TypeTurnStart, session.TurnStart{Turn: 1, Trigger: session.Trigger{Kind: session.TriggerMessage}}); err != nil {
		t.Fatal(err)
	}
	if err := c.flushPending(ctx, s); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.RemoveSessionRule(ctx, s, Rule{Text: "Bash(make:*)", Behavior: Allow}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if got := SessionRules(s.Events()); len(got) != 0 || s.Len() != 3 {
		t.Errorf("after add and remove: %v (%d events)", got, s.Len())
	}
	if d := c.Decide(ctx, in, ""); d.Behavior != Ask {
		t.Errorf("after removal: %+v", d)
	}
}

func TestExitPlanModeThroughTheRegistry(t *testing.T) {
	r := newRig(t, Config{Mode: ModeAcceptEdits, ModeSource: settings.LayerUser})
	r.install()
	ctx := context.Background()
	render := func() string {
		a, err := r.pb.Build(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return a.Render(ctx)
	}
	if strings.Contains(render(), "Plan mode") {
		t.Error("plan prompt outside plan mode")
	}
	ap := &approver{answer: tool.Approval{Allow: true}, session: true}
	if out := r.exec(ExitPlanTool, map[string]string{"plan": "p"}, ap); out.Decision.Kind != tool.Deny || len(ap.asked) != 0 {
		t.Errorf("outside plan mode: %+v", out.Decision)
	}
	if err := r.c.SetMode(ModePlan); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(render(), ExitPlanTool) {
		t.Error("no plan prompt in plan mode")
	}
	if out := r.exec("edit", map[string]string{"file_path": "a.go"}, ap); out.Decision.Kind != tool.Deny || len(ap.asked) != 0 {
		t.Errorf("edit in plan mode: %+v", out.Decision)
	}
	// Rejected: still planning.
	ap.answer = tool.Approval{Allow: false, Reason: "also handle errors"}
	if out := r.exec(ExitPlanTool, map[string]string{"plan": "1. change a.go"}, ap); out.Decision.Kind != tool.Ask || !out.Result.IsError {
		t.Errorf("rejected plan: %+v", out)
	}
	if r.c.Mode() != ModePlan {
		t.Errorf("mode after a rejected plan: %s", r.c.Mode())
	}
	// The approver saw the plan as the tool presents it.
	v := ap.asked[0].Call
	if view := (&exitPlanTool{}).PresentCall(v.Args); view == nil || view.Text != "1. change a.go" {
		t.Errorf("presented %+v", view)
	}
	// Approved: back to the mode before plan, recorded, and never remembered.
	ap.answer = tool.Approval{Allow: true, Rules: []string{ExitPlanTool}}
	out := r.exec(ExitPlanTool, map[string]string{"plan": "1. change a.go"}, ap)
	if out.Result.IsError || r.c.Mode() != ModeAcceptEdits || !strings.Contains(out.Result.Content[0].Text, "acceptEdits") {
		t.Errorf("approved plan: %+v, mode %s", out.Result, r.c.Mode())
	}
	if evs := r.host.ofType(EventMode); len(evs) != 1 || evs[0].(ModeEvent) != (ModeEvent{Mode: ModeAcceptEdits, Previous: ModePlan, By: ExitPlanTool}) {
		t.Errorf("mode events %+v", evs)
	}
	if len(r.c.Rules("s1")) != 0 {
		t.Error("exit_plan_mode approval was remembered")
	}
	// Even bypass mode does not approve a plan for the user.
	if err := r.c.SetMode(ModePlan); err != nil {
		t.Fatal(err)
	}
	if d := r.c.Decide(ctx, call(ExitPlanTool, map[string]string{"plan": "p"}), ""); d.Behavior != Ask {
		t.Errorf("%+v", d)
	}
}

func TestInstallIsUndoneWithTheScope(t *testing.T) {
	r := newRig(t, Config{Rules: rules(Deny, "d", "Bash(rm:*)")})
	r.install()
	if err := r.c.Install(kernel.NewScope("again"), r.reg, nil, nil); err == nil {
		t.Error("installed twice")
	}
	if _, ok := r.reg.Get(ExitPlanTool); !ok {
		t.Fatal("exit_plan_mode not registered")
	}
	if err := r.scope.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.reg.Get(ExitPlanTool); ok {
		t.Error("exit_plan_mode still registered")
	}
	if r.reg.GuardPoint.Len() != 0 || r.reg.PreExecute.Len() != 0 || r.reg.Observed.Len() != 0 {
		t.Error("listeners left behind")
	}
	if out := r.exec("bash", map[string]string{"command": "rm x"}, nil); out.Result.IsError {
		t.Errorf("uninstalled checker still decides: %+v", out)
	}
	// It can be installed again.
	r.scope = kernel.NewScope("again")
	r.install()
}

// TestRememberedRulesAreTheOnesShown: "allow for this session" remembers
// the rules suggested when the user was asked, not a decision made again
// after the command ran: here the command turns its output file into a
// symlink to ~/.bashrc, which a second decision would follow.
func TestRememberedRulesAreTheOnesShown(t *testing.T) {
	r := newRig(t, Config{})
	r.install()
	target := filepath.Join(r.env.home, ".bashrc")
	if err := os.WriteFile(target, []byte("# rc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ap := tool.ApproverFunc(func(_ context.Context, req tool.ApprovalRequest) (tool.Approval, error) {
		// What the command does once allowed: the symlink appears before
		// the outcome is observed.
		if err := os.Symlink(target, filepath.Join(r.env.root, "out.txt")); err != nil {
			t.Fatal(err)
		}
		return tool.Approval{Allow: true, Rules: req.Suggestions, By: "user"}, nil
	})
	r.exec("bash", map[string]string{"command": "ln -sf " + target + " out.txt; echo evil > out.txt"}, ap)
	var remembered []string
	for _, ru := range r.c.Rules("s1") {
		remembered = append(remembered, ru.Text)
	}
	if !slices.Contains(remembered, "Edit(/"+filepath.Join(r.env.root, "out.txt")+")") || slices.ContainsFunc(remembered, func(s string) bool {
		return strings.HasPrefix(s, "Edit(") && strings.Contains(s, ".bashrc")
	}) {
		t.Fatalf("remembered %v: want the rules suggested when asked, none naming .bashrc", remembered)
	}
	edit := call("edit", map[string]string{"file_path": target})
	edit.Host = r.host
	if d := r.c.Decide(context.Background(), edit, ""); d.Behavior == Allow {
		t.Fatalf("an edit of ~/.bashrc is allowed after approving a write to out.txt: %+v", d)
	}
}
