package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
)

// DecisionKind is the verdict of the pre-execute gate.
type DecisionKind string

// Decision kinds.
const (
	Allow DecisionKind = "allow"
	Deny  DecisionKind = "deny"
	Ask   DecisionKind = "ask"
)

// Decision is a pre-execute verdict. Args, when set, rewrites the call's
// arguments: the rewrite is recorded on the tool/call event (with the
// original beside it), shown in the next request's history and in every UI,
// and is what the tool runs with. It is the only way to change arguments.
type Decision struct {
	Kind   DecisionKind
	Reason string
	Args   json.RawMessage
	// By names who decided (a plugin or hook), for the audit log.
	By string
	// Approved marks an allow that answers the permission question itself
	// (a user-configured hook's "allow"): an ask from rules or modes
	// further out does not apply. Deny rules, which are guards, still do.
	Approved bool
	// Suggestions, on an ask, are the permission rules that would let calls
	// like this one run without asking (the permission layer's). They
	// travel with the approval request, so "allow for this session"
	// accepts what the user was shown; see [Approval.Rules].
	Suggestions []string
}

// Context is model-facing text a listener attaches to a call's outcome; it
// is injected after all results of the step.
type Context struct {
	Content []llm.Block
	Source  llm.Source
}

// PostInput is what post-execute listeners see: a copy of the call and of
// the result, so mutating it changes nothing; only the decision counts.
type PostInput struct {
	Call   Call
	Result Result
	// Ran reports that the tool itself was invoked. It is false for calls
	// that were denied, not approved, named no visible tool or failed
	// argument validation: their error result never came from the tool
	// (Claude Code's PostToolUseFailure fires only for tools that ran).
	Ran bool
	// Duration is the tool's run time (zero when it did not run); it
	// excludes the gate and the approval.
	Duration time.Duration
}

// PostDecision is a post-execute verdict: accept (optionally replacing the
// content) or block (the feedback becomes an error result).
type PostDecision struct {
	Block   bool
	Content []llm.Block // accept: replacement content; block: feedback
	Context *Context
	By      string
}

// Guard accumulates a final denial. The first guard to deny wins; no later
// guard, pre-execute listener or approver can overturn it.
type Guard struct {
	Call   Call
	denied bool
	reason string
	by     string
}

// Deny records a final denial and stops the guard run.
func (g *Guard) Deny(by, reason string) error {
	if !g.denied {
		g.denied, g.reason, g.by = true, reason, by
	}
	return kernel.ErrStop
}

// ErrorInfo names a harness failure on a result (error.name / error.code).
type ErrorInfo struct {
	Name string `json:"name"`
	Code string `json:"code"`
}

// Outcome is the final, immutable record of one call, as observers see it.
type Outcome struct {
	Call     Call // effective call
	Original string
	Decision Decision
	Approval *Approval // when the decision was ask
	Result   Result
	Error    *ErrorInfo
	Context  *Context
	Duration time.Duration
}

// Pending is a call that passed the gate phase and is ready to run (or to be
// reported as denied). The loop records it as a tool/call event between
// Prepare and Finish, so the audit log holds the effective arguments before
// anything runs.
type Pending struct {
	Call     Call
	Original string
	Decision Decision
	info     *Info
	start    time.Time
}

// Rewritten reports whether the decision changed the arguments.
func (p *Pending) Rewritten() bool { return p.Decision.Args != nil }

// Registry holds the tools and runs the pipeline.
type Registry struct {
	mu        sync.RWMutex
	tools     map[string]*registered
	order     []string
	restricts []*restrict
	valid     validator
	now       func() time.Time

	// Changed fires after a tool is registered or removed.
	Changed *kernel.Signal[struct{}]
	// GuardPoint runs first; a denial there is final.
	GuardPoint *kernel.Serial[*Guard]
	// PreExecute decides allow / deny / ask and may rewrite arguments.
	PreExecute *kernel.Chain[Call, Decision]
	// Wrap surrounds the tool's execution (validation included): deadlines,
	// retries, metrics. A listener may pass next a different context.
	Wrap *kernel.Chain[Call, Result]
	// PostExecute may replace content, block, or attach context.
	PostExecute *kernel.Chain[PostInput, PostDecision]
	// Observed sees every final outcome; listener errors are ignored.
	Observed *kernel.Signal[Outcome]
	// Progress carries output of running calls to whoever watches them
	// (see [ReportOutput]); listener errors are ignored.
	Progress *kernel.Signal[Progress]
}

// registered wraps a tool so identity checks never compare tool values
// (which may not be comparable).
type registered struct{ Tool }

type restrict struct {
	fn func(Info) bool
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{
		tools:       map[string]*registered{},
		now:         time.Now,
		Changed:     kernel.NewSignal[struct{}]("tools/change"),
		GuardPoint:  kernel.NewSerial[*Guard]("tools/guard"),
		PreExecute:  kernel.NewChain[Call, Decision]("tools/pre-execute"),
		Wrap:        kernel.NewChain[Call, Result]("tools/execute"),
		PostExecute: kernel.NewChain[PostInput, PostDecision]("tools/post-execute"),
		Observed:    kernel.NewSignal[Outcome]("tools/result"),
		Progress:    kernel.NewSignal[Progress]("tools/progress"),
	}
}

// Register adds t. A duplicate name is an error. A failing Changed listener
// rolls the registration back.
func (r *Registry) Register(t Tool) (dispose func(), err error) {
	name := t.Info().Name
	if name == "" {
		return nil, errors.New("tool: tool has no name")
	}
	r.mu.Lock()
	if _, dup := r.tools[name]; dup {
		r.mu.Unlock()
		return nil, fmt.Errorf("tool: tool %q is already registered", name)
	}
	reg := &registered{t}
	r.tools[name] = reg
	r.order = append(r.order, name)
	r.mu.Unlock()
	remove := func() {
		r.mu.Lock()
		if r.tools[name] == reg {
			delete(r.tools, name)
			r.order = slices.DeleteFunc(r.order, func(n string) bool { return n == name })
		}
		r.mu.Unlock()
	}
	if err := r.Changed.Emit(context.Background(), struct{}{}); err != nil {
		remove()
		return nil, fmt.Errorf("tool: registering %q: %w", name, err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			remove()
			_ = r.Changed.Emit(context.Background(), struct{}{})
		})
	}, nil
}

// RegisterAll registers tools into scope, all or nothing.
func (r *Registry) RegisterAll(scope *kernel.Scope, tools ...Tool) error {
	return scope.Effect(func(record func(func() error)) error {
		for _, t := range tools {
			d, err := r.Register(t)
			if err != nil {
				return err
			}
			record(func() error { d(); return nil })
		}
		return nil
	})
}

// Restrict hides every tool for which keep returns false, from schemas and
// from execution, until dispose is called. Restrictions compose (a tool is
// visible only when every restriction keeps it).
func (r *Registry) Restrict(keep func(Info) bool) (dispose func()) {
	x := &restrict{fn: keep}
	r.mu.Lock()
	r.restricts = append(r.restricts, x)
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		r.restricts = slices.DeleteFunc(r.restricts, func(y *restrict) bool { return y == x })
		r.mu.Unlock()
		_ = r.Changed.Emit(context.Background(), struct{}{})
	}
}

// Get returns a registered tool (restrictions do not apply).
func (r *Registry) Get(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.tools[name]
	if !ok {
		return nil, false
	}
	return t.Tool, true
}

// Visible returns the infos of the tools visible through filter (nil means
// every tool) and the registry's restrictions, in registration order.
func (r *Registry) Visible(filter func(Info) bool) []Info {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Info, 0, len(r.order))
	for _, name := range r.order {
		info := r.tools[name].Info()
		if r.visibleLocked(info, filter) {
			out = append(out, info)
		}
	}
	return out
}

func (r *Registry) visibleLocked(info Info, filter func(Info) bool) bool {
	for _, x := range r.restricts {
		if !x.fn(info) {
			return false
		}
	}
	return filter == nil || filter(info)
}

// Schemas returns the model-facing schemas of the visible tools (copies).
func (r *Registry) Schemas(filter func(Info) bool) []llm.ToolSchema {
	infos := r.Visible(filter)
	out := make([]llm.ToolSchema, len(infos))
	for i, info := range infos {
		out[i] = info.Schema().Clone()
	}
	return out
}

// lookup finds a visible tool.
func (r *Registry) lookup(name string, filter func(Info) bool) (Tool, *Info, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.tools[name]
	if ok {
		info := t.Info()
		if r.visibleLocked(info, filter) {
			return t.Tool, &info, nil
		}
	}
	var names []string
	for _, n := range r.order {
		if r.visibleLocked(r.tools[n].Info(), filter) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	msg := fmt.Sprintf("unknown tool %q", name)
	if len(names) > 0 {
		msg += "; available tools: " + strings.Join(names, ", ")
	}
	return nil, nil, &llm.Error{Name: "ToolNotFoundError", Code: "UNKNOWN_TOOL", Message: msg}
}

// ExecOptions carry what one agent contributes to a call's execution.
type ExecOptions struct {
	// Visible restricts the tools this caller may see and call. Listeners
	// and tools read it with VisibleFrom.
	Visible func(Info) bool
	// Approver answers ask decisions; nil fails them closed.
	Approver Approver
	// OnAsk and OnAnswer let the caller record the approval exchange.
	OnAsk    func(ctx context.Context, p *Pending)
	OnAnswer func(ctx context.Context, p *Pending, a Approval)
}

// visibleKey carries a caller's ExecOptions.Visible on the contexts the
// registry passes to listeners, approvers and Tool.Run.
type visibleKey struct{}

type visibleFilter struct{ fn func(Info) bool }

// withVisible records the caller's filter on ctx; a nil filter is recorded
// too, so it overrides the filter of an enclosing call.
func withVisible(ctx context.Context, fn func(Info) bool) context.Context {
	return context.WithValue(ctx, visibleKey{}, visibleFilter{fn: fn})
}

// VisibleFrom returns the tool filter of the caller a call is prepared or
// run for (its ExecOptions.Visible), as Prepare and Finish record it on the
// contexts they pass to listeners, approvers and Tool.Run. Nil means the
// caller sees every tool. Tools that run or describe other tools
// by name (dispatchers) use it to stay within what their caller may see.
func VisibleFrom(ctx context.Context) func(Info) bool {
	v, _ := ctx.Value(visibleKey{}).(visibleFilter)
	return v.fn
}

// NewCall builds a call from a model's tool-call block: "" becomes {},
// invalid JSON leaves Args nil (the pipeline reports it precisely).
func NewCall(id llm.CallID, name, raw string, host Host) Call {
	c := Call{ID: id, Name: name, Raw: raw, Host: host}
	switch {
	case strings.TrimSpace(raw) == "":
		c.Args = json.RawMessage(`{}`)
	case json.Valid([]byte(raw)):
		c.Args = json.RawMessage(raw)
	}
	return c
}

// Prepare runs the gate: guards, then pre-execute. It never fails; a
// listener error becomes a denial naming the failure.
func (r *Registry) Prepare(ctx context.Context, call Call, opts ExecOptions) *Pending {
	ctx = withVisible(ctx, opts.Visible)
	p := &Pending{Call: call, Original: call.Raw, start: r.now()}
	if _, info, err := r.lookup(call.Name, opts.Visible); err == nil {
		p.info = info
	}
	g := &Guard{Call: private(call)}
	if err := r.GuardPoint.Run(ctx, g); err != nil {
		p.Decision = Decision{Kind: Deny, Reason: "tool guard failed: " + err.Error(), By: "guard"}
		return p
	}
	if g.denied {
		p.Decision = Decision{Kind: Deny, Reason: g.reason, By: g.by}
		return p
	}
	d, err := r.PreExecute.Run(ctx, private(call), func(context.Context, Call) (Decision, error) {
		return Decision{Kind: Allow}, nil
	})
	if err != nil {
		p.Decision = Decision{Kind: Deny, Reason: err.Error(), By: "pre-execute"}
		return p
	}
	switch d.Kind {
	case Allow, Ask:
	case Deny:
		if d.Reason == "" {
			d.Reason = fmt.Sprintf("tool %q was denied", call.Name)
		}
	default:
		d = Decision{Kind: Deny, Reason: fmt.Sprintf("pre-execute returned unknown decision %q", d.Kind), By: d.By}
	}
	if d.Args != nil && d.Kind != Deny {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(d.Args, &obj); err != nil {
			d = Decision{Kind: Deny, Reason: "rewritten arguments are not a JSON object: " + err.Error(), By: d.By}
		} else {
			p.Call.Args = append(json.RawMessage(nil), d.Args...)
			p.Call.Raw = string(d.Args)
		}
	} else {
		d.Args = nil
	}
	p.Decision = d
	return p
}

// Finish asks for approval when needed, runs the tool through the wrapper,
// applies post-execute and notifies observers. It never fails: every
// failure is an error result the model can read.
func (r *Registry) Finish(ctx context.Context, p *Pending, opts ExecOptions) Outcome {
	ctx = withVisible(ctx, opts.Visible)
	out := Outcome{Call: p.Call, Original: p.Original, Decision: p.Decision}
	var res Result
	var info *ErrorInfo
	var run ran
	switch p.Decision.Kind {
	case Deny:
		res = ErrorResult("Error: " + p.Decision.Reason)
	case Ask:
		if err := r.precheck(ctx, p, opts); err != nil {
			// A call that cannot succeed is not put to the user: the
			// model reads why, as if the tool had run and failed.
			res, info = errorResult(err)
			break
		}
		a := r.approve(ctx, p, opts)
		out.Approval = &a
		if !a.Allow {
			res = ErrorResult(DenialText(a))
			break
		}
		res, info = r.dispatch(ctx, p, opts, &run)
	default:
		res, info = r.dispatch(ctx, p, opts, &run)
	}
	out.Result, out.Error = res, info
	r.post(ctx, p, &out, run)
	out.Duration = r.now().Sub(p.start)
	_ = r.Observed.EmitAll(ctx, out)
	return out
}

// Execute is Prepare followed by Finish, for callers that do not record the
// call in between (subagents, tests).
func (r *Registry) Execute(ctx context.Context, call Call, opts ExecOptions) Outcome {
	return r.Finish(ctx, r.Prepare(ctx, call, opts), opts)
}

func (r *Registry) approve(ctx context.Context, p *Pending, opts ExecOptions) Approval {
	reason := p.Decision.Reason
	if reason == "" {
		reason = fmt.Sprintf("tool %q requires approval", p.Call.Name)
	}
	if opts.Approver == nil {
		a := Approval{Allow: false, By: ByNone, Reason: reason + ", but no approver is attached to this agent (headless or non-interactive); allow the tool in the permission settings or run interactively"}
		if opts.OnAnswer != nil {
			opts.OnAnswer(ctx, p, a)
		}
		return a
	}
	if opts.OnAsk != nil {
		opts.OnAsk(ctx, p)
	}
	var info Info
	if p.info != nil {
		info = *p.info
	}
	a, err := safeApprove(ctx, opts.Approver, ApprovalRequest{Call: p.Call, Info: info, Reason: reason, Suggestions: slices.Clone(p.Decision.Suggestions)})
	if err != nil {
		a = Approval{Allow: false, By: ByError, Reason: fmt.Sprintf("approval for %q failed: %v", p.Call.Name, err)}
	}
	if !a.Allow && a.Reason == "" && !Denied(a) {
		a.Reason = fmt.Sprintf("approval for %q was refused", p.Call.Name)
	}
	if opts.OnAnswer != nil {
		opts.OnAnswer(ctx, p, a)
	}
	return a
}

func safeApprove(ctx context.Context, ap Approver, req ApprovalRequest) (a Approval, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("approver panicked: %v", v)
		}
	}()
	return ap.Approve(ctx, req)
}

// Prechecker is implemented by tools that can tell, before anyone is
// asked to approve a call, that it cannot succeed: an edit of a file the
// agent has not read, or one outside the directories the tool may touch.
// The registry runs Precheck on calls that would ask; an error is the
// call's result (what the model reads), and nobody is asked. It must not
// change anything: the call may still be refused after it.
type Prechecker interface {
	Precheck(ctx context.Context, call Call) error
}

// precheck runs the tool's Precheck, if it has one.
func (r *Registry) precheck(ctx context.Context, p *Pending, opts ExecOptions) error {
	t, _, err := r.lookup(p.Call.Name, opts.Visible)
	if err != nil || p.Call.Args == nil {
		return nil // dispatch reports these
	}
	pc, ok := t.(Prechecker)
	if !ok {
		return nil
	}
	return pc.Precheck(ctx, private(p.Call))
}

// ran records whether and how long dispatch ran the tool itself.
type ran struct {
	ok       bool
	duration time.Duration
}

func (r *Registry) dispatch(ctx context.Context, p *Pending, opts ExecOptions, run *ran) (Result, *ErrorInfo) {
	res, err := r.Wrap.Run(ctx, private(p.Call), func(ctx context.Context, _ Call) (Result, error) {
		// The wrapper may change the context (deadlines, retries) but not
		// the call: what runs is the pending call the audit log recorded.
		call := private(p.Call)
		t, info, err := r.lookup(call.Name, opts.Visible)
		if err != nil {
			return Result{}, err
		}
		if call.Args == nil {
			return Result{}, ArgsError(call.Name, "arguments are not valid JSON: "+jsonProblem(call.Raw)+"; send a JSON object that matches the tool's schema")
		}
		if err := r.valid.Validate(info.Name, info.Parameters, call.Args); err != nil {
			return Result{}, err
		}
		// Set again: a wrapper may have passed a context of its own.
		start := r.now()
		run.ok = true
		defer func() { run.duration += r.now().Sub(start) }()
		return t.Run(r.withAsk(r.withProgress(withVisible(ctx, opts.Visible), call), p, opts), call)
	})
	if err != nil {
		return errorResult(err)
	}
	if res.Content == nil {
		res.Content = []llm.Block{}
	}
	return res, nil
}

func jsonProblem(raw string) string {
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return err.Error()
	}
	return "unexpected input"
}

func errorResult(err error) (Result, *ErrorInfo) {
	res := ErrorResult("Error: " + err.Error())
	var pe *kernel.PanicError
	if errors.As(err, &pe) {
		res = ErrorResult(fmt.Sprintf("Error: the tool crashed: %v", pe.Value))
		return res, &ErrorInfo{Name: "PanicError", Code: "PANIC"}
	}
	if he, ok := llm.AsError(err); ok {
		return res, &ErrorInfo{Name: he.Name, Code: he.Code}
	}
	return res, nil
}

func (r *Registry) post(ctx context.Context, p *Pending, out *Outcome, run ran) {
	in := PostInput{Call: private(p.Call), Result: Result{
		Content: llm.CloneBlocks(out.Result.Content),
		Meta:    append(json.RawMessage(nil), out.Result.Meta...),
		IsError: out.Result.IsError,
	}, Ran: run.ok, Duration: run.duration}
	d, err := r.PostExecute.Run(ctx, in, func(context.Context, PostInput) (PostDecision, error) {
		return PostDecision{}, nil
	})
	if err != nil {
		out.Result, out.Error = errorResult(err)
		return
	}
	out.Context = d.Context
	if d.Block {
		out.Result = Result{Content: d.Content, IsError: true}
		out.Error = nil
		return
	}
	if d.Content != nil {
		out.Result.Content = d.Content
	}
}

// private copies a call's argument bytes, so a listener that writes into
// the slice it was given cannot change what runs.
func private(c Call) Call {
	if c.Args != nil {
		c.Args = append(json.RawMessage(nil), c.Args...)
	}
	return c
}
