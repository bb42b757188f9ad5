// Package headless is dsh's scripting front door, `dsh -p`: one prompt or a
// stream of them, answered in Claude Code's formats so that scripts, CI
// actions and the Claude Agent SDK written for Claude Code drive dsh
// unchanged.
//
// Output formats: text (the final answer), json (Claude Code's result
// object), stream-json (Claude Code's message stream: system/init,
// assistant and user messages with Anthropic content blocks, stream_event
// partial deltas with --include-partial-messages, then a result per turn)
// and events (dsh's own session events, one per line, then dsh's result;
// see docs/headless.md). With --input-format stream-json, user messages
// arrive as JSON lines on stdin for a multi-turn session in one process,
// together with the Agent SDK's control protocol (control.go).
package headless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/checkpoint"
	"github.com/dshq/dsh/commands"
	"github.com/dshq/dsh/internal/claudemsg"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/mcp"
	"github.com/dshq/dsh/permission"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/tool"
)

// Output formats.
const (
	FormatText       = "text"
	FormatJSON       = "json"
	FormatStreamJSON = "stream-json"
	FormatEvents     = "events"
)

// Input formats.
const (
	InputText       = "text"
	InputStreamJSON = "stream-json"
)

// OutputFormats and InputFormats list the accepted names.
var (
	OutputFormats = []string{FormatText, FormatJSON, FormatStreamJSON, FormatEvents}
	InputFormats  = []string{InputText, InputStreamJSON}
)

// Options configure one headless run.
type Options struct {
	App *app.App
	// Prompt is the prompt of the command line (with piped stdin already
	// added). With stream-json input it is sent first when not empty.
	Prompt       string
	InputFormat  string
	OutputFormat string
	In           io.Reader // stream-json input
	Out          io.Writer
	// Err receives warnings (unsupported requests and fields).
	Err io.Writer
	// Open says which session to work on (resume, fork, pinned id).
	Open app.OpenOptions
	// IncludePartialMessages adds stream_event lines (stream-json only).
	IncludePartialMessages bool
	// PermissionPromptTool routes permission questions: "stdio" to the
	// SDK's canUseTool over the control protocol, an MCP tool name
	// (mcp__server__tool) to that tool; empty leaves them to the
	// permission mode (asks fail closed).
	PermissionPromptTool string
	// JSONSchema makes the final answer a JSON value conforming to it.
	JSONSchema json.RawMessage
	// SchemaRetries bounds the model's attempts to fix a non-conforming
	// answer (default 3).
	SchemaRetries int
	// SystemPrompt, when set, replaces the system prompt dsh assembles for
	// the main agent (--system-prompt); the settings' and
	// --append-system-prompt's text still follow it.
	SystemPrompt string
	// MaxBudgetUSD stops a turn once the estimated cost passes it (0: no
	// limit).
	MaxBudgetUSD float64
	// ReportState emits session_state_changed lines (the SDK asks with
	// CLAUDE_CODE_SDK_READS_SESSION_STATE).
	ReportState bool
	// Progress, when set, hears what the session is doing (a step
	// started, a tool runs, the model wrote), for callers that report
	// progress (dsh mcp serve).
	Progress func(step int, message string)
	// ReplayUserMessages echoes the user's messages as user lines with
	// isReplay and their uuid (stream-json; --replay-user-messages): the
	// uuid is what rewind_files takes.
	ReplayUserMessages bool
	// Version is reported as claude_code_version.
	Version string
	Logger  *slog.Logger
	// Now is the clock (durations).
	Now func() time.Time
	// Continued, when set, is called once, when the run starts its
	// ContinuedAt'th step (over all its turns): start-up is long behind it,
	// and the run is long enough for what follows to matter (the CLI gives
	// back the executable's start-up pages then; see internal/exepages). A
	// short run never calls it: the release costs it more CPU than it saves
	// memory.
	Continued func()
}

// ContinuedAt is the step whose start calls Options.Continued: a 3-step
// run that released start-up's pages at its second step took 29 ms (11%)
// more CPU for 0.6 MiB less peak RSS (docs/benchmarks.md).
const ContinuedAt = 10

// run is one headless run's state.
type run struct {
	o    Options
	a    *app.App
	ag   agent.Agent
	sess *session.Session
	sid  string
	conv claudemsg.Converter
	w    *lineWriter
	ctl  *control // stream-json input only

	mu       sync.Mutex
	hd       *agent.Handle
	unlisten func()
	stats    *turnStats
	costs    costs
	partial  partials
	results  []Result
	turnDone chan struct{} // signalled at every turn end
	// interrupted marks turns the client interrupted (control interrupt):
	// they do not make the process fail.
	interrupted map[int]bool
	schema      *schemaCheck
	system      systemOverride
	model       string // set_model's choice ("" = the app's)
	pendingMode string // set_permission_mode before the session opened
	// openErr is a failure to open the session in stream-json mode (set
	// and read on the work goroutine, then read after it ended).
	openErr  error
	openCode int
	sdkHooks *sdkHooks
	// pendingUUIDs are uuids of user lines the client sent, waiting for
	// their user/message events; clientUUIDs maps each to its event's seq
	// (rewind_files names messages by them).
	pendingUUIDs []string
	clientUUIDs  map[string]int64
	// openMu serializes opening the session (the work goroutine, a
	// rewind_files request).
	openMu sync.Mutex
	// rewindTurn is the open one-shot turn of a rewind (0: none).
	rewindTurn int
	// stepStarts counts the steps the run started, over all its turns
	// (under mu): the ContinuedAt'th calls Options.Continued.
	stepStarts int
}

// Run runs the session and writes its output. It returns the process exit
// code; the error, when set, is one line for stderr.
func Run(ctx context.Context, o Options) (int, error) {
	if o.OutputFormat == "" {
		o.OutputFormat = FormatText
	}
	if o.InputFormat == "" {
		o.InputFormat = InputText
	}
	if !slices.Contains(OutputFormats, o.OutputFormat) {
		return app.ExitUsage, fmt.Errorf("unknown --output-format %q (want %s)", o.OutputFormat, strings.Join(OutputFormats, ", "))
	}
	if !slices.Contains(InputFormats, o.InputFormat) {
		return app.ExitUsage, fmt.Errorf("unknown --input-format %q (want %s)", o.InputFormat, strings.Join(InputFormats, ", "))
	}
	if o.InputFormat == InputStreamJSON && o.OutputFormat != FormatStreamJSON {
		return app.ExitUsage, errors.New("--input-format stream-json requires --output-format stream-json")
	}
	if o.IncludePartialMessages && o.OutputFormat != FormatStreamJSON {
		return app.ExitUsage, errors.New("--include-partial-messages requires --output-format stream-json")
	}
	if o.PermissionPromptTool == "stdio" && o.InputFormat != InputStreamJSON {
		return app.ExitUsage, errors.New("--permission-prompt-tool stdio requires --input-format stream-json")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Err == nil {
		o.Err = io.Discard
	}
	if o.SchemaRetries <= 0 {
		o.SchemaRetries = 3
	}
	r := &run{o: o, a: o.App, w: &lineWriter{out: o.Out}, turnDone: make(chan struct{}, 1), interrupted: map[int]bool{}}
	r.costs.prices = r.a.Prices
	r.costs.info = func(model string) llm.ModelInfo {
		in, _ := r.a.Host.LLM.Info(model)
		return in
	}
	if o.SystemPrompt != "" {
		text := o.SystemPrompt
		r.system.replace = &text
	}
	if len(o.JSONSchema) > 0 {
		sc, err := newSchemaCheck(o.JSONSchema, o.SchemaRetries)
		if err != nil {
			return app.ExitUsage, fmt.Errorf("--json-schema: %v", err)
		}
		r.schema = sc
	}
	if o.PermissionPromptTool != "" && o.PermissionPromptTool != "stdio" && !strings.HasPrefix(o.PermissionPromptTool, "mcp__") {
		return app.ExitUsage, fmt.Errorf("--permission-prompt-tool %q: want stdio or an MCP tool name (mcp__server__tool)", o.PermissionPromptTool)
	}
	start := o.Now()
	// MCP servers start in the background and never hold up the prompt: a
	// server with a cached tool list has its tools registered already (a
	// call waits for the server to start); one seen for the first time
	// adds its tools once it has connected.
	if r.a.MCP != nil {
		for _, st := range r.a.MCP.Servers() {
			if st.State == mcp.StateConnecting && len(st.Tools) == 0 {
				fmt.Fprintf(o.Err, "dsh: mcp: server %q is still starting and its tools are not known yet: they join once it is connected (later runs have them from the start)\n", st.Name)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		// Interrupted before anything ran: the documented code for a
		// cancelled run, and no session to name.
		return app.ExitAborted, errors.New("interrupted before the prompt was sent")
	}
	undo, err := r.install()
	if err != nil {
		return app.ExitError, err
	}
	defer undo()
	if o.InputFormat == InputStreamJSON {
		return r.streamInput(ctx, start)
	}
	if code, err := r.open(ctx); err != nil {
		return code, err
	}
	defer r.dispose(ctx)
	return r.oneShot(ctx, start)
}

// open opens the session the options name and follows it.
func (r *run) open(ctx context.Context) (int, error) {
	hd, err := r.a.Open(ctx, r.o.Open)
	if err != nil {
		code, msg := openFailure(r.o.Open, err)
		WriteRefused(r.o.Out, r.o.OutputFormat, string(r.o.Open.Resume), msgWith(msg, err))
		return code, msg
	}
	ag := hd.Agent
	sid := string(ag.Session().ID())
	r.mu.Lock()
	r.hd, r.ag, r.sess, r.sid = hd, ag, ag.Session(), sid
	r.conv = claudemsg.Converter{Session: sid, Model: r.a.Model}
	r.partial = partials{session: sid, model: r.a.Model}
	mode := r.pendingMode
	r.mu.Unlock()
	if mode != "" {
		if err := r.setMode(mode); err != nil {
			fmt.Fprintf(r.o.Err, "dsh: %v\n", err)
		}
	}
	r.unlisten = r.listen()
	return app.ExitOK, nil
}

// dispose ends the session's agent (its last events flushed).
func (r *run) dispose(ctx context.Context) {
	r.mu.Lock()
	hd, unlisten := r.hd, r.unlisten
	r.mu.Unlock()
	if hd != nil {
		_ = hd.Dispose(context.WithoutCancel(ctx))
	}
	if unlisten != nil {
		unlisten()
	}
}

// agent returns the run's agent (nil before the session is open).
func (r *run) agent() agent.Agent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ag
}

// openFailure maps a failure to open the session to an exit code and a
// message for people (no internal error chains).
func openFailure(o app.OpenOptions, err error) (int, error) {
	var amb *store.AmbiguousError
	switch {
	case errors.As(err, &amb):
		return app.ExitUsage, amb
	case errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalidID):
		return app.ExitUsage, fmt.Errorf("no session %q to resume (dsh sessions lists them)", o.Resume)
	case errors.Is(err, app.ErrSessionExists):
		return app.ExitUsage, fmt.Errorf("--session-id %s: a session with this id already exists (resume it with --resume)", o.SessionID)
	}
	var inUse *store.InUseError
	if errors.As(err, &inUse) {
		return app.ExitError, fmt.Errorf("session %s is in use by another dsh process", o.Resume)
	}
	return app.ExitError, fmt.Errorf("cannot open the session: %s", rootCause(err))
}

// msgWith keeps err's identity (errors.Is) under a message for people.
func msgWith(msg, err error) error { return &shown{msg: msg, err: err} }

type shown struct{ msg, err error }

func (s *shown) Error() string { return s.msg.Error() }
func (s *shown) Unwrap() error { return s.err }

// rootCause is the innermost message of an error chain, which names the
// problem without the layers that passed it on.
func rootCause(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err.Error()
		}
		err = u
	}
}

// install registers the run's listeners on the app: denials, SDK hook
// callbacks, the permission prompt, structured output, the per-session
// request settings.
func (r *run) install() (func(), error) {
	h := r.a.Host
	var undo []func()
	done := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	undo = append(undo, h.Tools.Observed.Listen(func(_ context.Context, out tool.Outcome) error {
		r.observed(out)
		return nil
	}))
	if r.o.InputFormat == InputStreamJSON {
		sh, err := r.installSDKHooks()
		if err != nil {
			done()
			return nil, fmt.Errorf("installing SDK hooks: %v", err)
		}
		r.sdkHooks = sh
		undo = append(undo, sh.close)
	}
	if r.o.PermissionPromptTool != "" {
		undo = append(undo, h.Tools.PreExecute.Use(r.promptPermission, prependNamed("headless-permission-prompt")...))
	}
	undo = append(undo, h.Agents.Hub.Continuation.Use(r.continuation))
	undo = append(undo, h.Agents.Hub.Request.Use(r.request))
	return done, nil
}

// mine reports whether an agent is the run's main agent.
func (r *run) mine(a agent.Agent) bool {
	me := r.agent()
	return a != nil && me != nil && a.ID() == me.ID()
}

// observed records refused calls of this session as permission denials.
func (r *run) observed(out tool.Outcome) {
	if out.Call.Host == nil || r.sess == nil || out.Call.Host.SessionID() != r.sid {
		return
	}
	denied := out.Decision.Kind == tool.Deny || (out.Approval != nil && !out.Approval.Allow)
	if !denied {
		return
	}
	d := Denial{ToolName: claudemsg.ToolName(out.Call.Name), ToolUseID: string(out.Call.ID),
		ToolInput: claudemsg.ToolInput(out.Call.Name, claudemsg.Input(out.Call.Raw))}
	r.mu.Lock()
	if r.stats != nil {
		r.stats.denials = append(r.stats.denials, d)
	}
	r.mu.Unlock()
}

// listen follows the session's events.
func (r *run) listen() func() {
	h := r.a.Host
	undoEvents := h.Sessions.Appended.Listen(func(_ context.Context, ap session.Appended) error {
		if ap.Session != r.sess {
			return nil
		}
		r.event(ap.Event)
		return nil
	})
	undoStatus := h.Agents.Hub.Status.Listen(func(_ context.Context, sc agent.StatusChange) error {
		if r.o.ReportState && r.mine(sc.Agent) {
			// "running" follows the turn's system/init (see event).
			if sc.Status == agent.Idle {
				r.state("idle")
			}
		}
		return nil
	})
	return func() { undoStatus(); undoEvents() }
}

func (r *run) state(s string) {
	_ = r.w.write(stateLine{Type: "system", Subtype: "session_state_changed", State: s,
		UUID: claudemsg.UUID(r.sid, "state", fmt.Sprint(time.Now().UnixNano())), SessionID: r.sid})
}

// event handles one event of the session: stats, and the lines of the
// output format.
func (r *run) event(e session.Event) {
	if r.o.OutputFormat == FormatEvents {
		if b, err := json.Marshal(e); err == nil {
			_ = r.w.raw(b)
		}
	}
	stream := r.o.OutputFormat == FormatStreamJSON
	switch e.Type {
	case session.TypeTurnStart:
		ts, _ := session.Decode[session.TurnStart](e)
		if ts.Trigger.Kind == checkpoint.TriggerRewind {
			// A rewind's one-shot turn (rewind_files) is no turn of the
			// client's: no init, no result line.
			r.mu.Lock()
			r.rewindTurn = ts.Turn
			r.mu.Unlock()
			return
		}
		r.mu.Lock()
		r.stats = &turnStats{turn: ts.Turn, startMS: e.Time}
		r.mu.Unlock()
		if stream && ts.Trigger.Kind != session.TriggerInjection {
			_ = r.w.write(r.initLine())
		}
		if r.o.ReportState {
			r.state("running")
		}
	case session.TypeStepStart:
		r.mu.Lock()
		step := 0
		if r.stats != nil {
			r.stats.steps++
			r.stats.stepStart = e.Time
			step = r.stats.steps
		}
		r.stepStarts++
		long := r.stepStarts == ContinuedAt
		r.mu.Unlock()
		if long && r.o.Continued != nil {
			r.o.Continued()
		}
		r.progress(step, fmt.Sprintf("step %d: asking the model", step))
	case session.TypeToolCall:
		if tc, err := session.Decode[session.ToolCall](e); err == nil {
			r.progress(tc.Step, fmt.Sprintf("step %d: running %s", tc.Step, claudemsg.ToolName(tc.Name)))
		}
	case session.TypeAssistantChunk:
		if stream && r.o.IncludePartialMessages {
			c, err := session.Decode[session.AssistantChunk](e)
			if err != nil {
				return
			}
			r.mu.Lock()
			evs := r.partial.chunk(c)
			r.mu.Unlock()
			for i, ev := range evs {
				_ = r.w.write(streamEventLine{Type: "stream_event", Event: ev, UUID: chunkUUID(r.sid, e.Seq, i), SessionID: r.sid})
			}
		}
	case session.TypeAssistantMessage:
		am, err := session.Decode[session.AssistantMessage](e)
		if err != nil {
			return
		}
		model := am.Model
		if model == "" {
			model = r.a.Model
		}
		r.mu.Lock()
		if st := r.stats; st != nil {
			st.answer(e, am, model, &r.costs)
		}
		over := r.o.MaxBudgetUSD > 0 && r.costs.total > r.o.MaxBudgetUSD
		if over && r.stats != nil {
			r.stats.budgetHit = true
		}
		r.mu.Unlock()
		if over {
			r.ag.Cancel("the --max-budget-usd limit was reached")
		}
		if stream {
			for _, en := range r.conv.Event(e) {
				_ = r.w.write(assistantLine{Type: "assistant", Message: en.Assistant, UUID: en.UUID, SessionID: r.sid})
			}
		}
	case session.TypeUserMessage:
		p, err := session.Decode[session.Prompt](e)
		if err != nil || p.Source.OrUser().Kind != "user" {
			return
		}
		uuid := ""
		r.mu.Lock()
		if len(r.pendingUUIDs) > 0 {
			uuid, r.pendingUUIDs = r.pendingUUIDs[0], r.pendingUUIDs[1:]
			if r.clientUUIDs == nil {
				r.clientUUIDs = map[string]int64{}
			}
			r.clientUUIDs[uuid] = e.Seq
		}
		r.mu.Unlock()
		if stream && r.o.ReplayUserMessages {
			for _, en := range r.conv.Event(e) {
				if uuid == "" {
					uuid = en.UUID
				}
				_ = r.w.write(userLine{Type: "user", Message: en.User, UUID: uuid, SessionID: r.sid, IsReplay: true})
			}
		}
	case session.TypeToolResult:
		if stream {
			for _, en := range r.conv.Event(e) {
				_ = r.w.write(userLine{Type: "user", Message: en.User, UUID: en.UUID, SessionID: r.sid})
			}
		}
	case session.TypeTurnEnd:
		te, err := session.Decode[session.TurnEnd](e)
		if err != nil {
			return
		}
		r.mu.Lock()
		if te.Turn == r.rewindTurn && te.Turn != 0 {
			r.rewindTurn = 0
			r.mu.Unlock()
			return
		}
		st := r.stats
		if st == nil {
			st = &turnStats{turn: te.Turn, startMS: e.Time}
		}
		r.stats = nil
		if st.budgetHit && te.Reason.Kind == session.EndAborted {
			te.Reason = session.EndReason{Kind: session.EndMaxSteps}
		}
		res := buildResult(st, te, r.sid, &r.costs, max(e.Time-st.startMS, 0))
		if r.interrupted[te.Turn] && res.code == app.ExitAborted {
			res.code = app.ExitOK
		}
		r.results = append(r.results, res)
		model := r.model
		r.mu.Unlock()
		if model == "" {
			model = r.a.Model
		}
		if stream && te.Reason.Kind == session.EndError {
			_ = r.w.write(errorLine(r.sid, model, e.Seq, te.Reason))
		}
		if stream {
			_ = r.w.write(res)
		}
		select {
		case r.turnDone <- struct{}{}:
		default:
		}
	}
}

func (r *run) progress(step int, msg string) {
	if r.o.Progress != nil {
		r.o.Progress(step, msg)
	}
}

// finishOf reads the stop reason an assistant message implies.
func finishOf(content []llm.Block) string {
	for _, b := range content {
		if b.Type == llm.BlockToolCall {
			return llm.FinishToolCalls
		}
	}
	return llm.FinishStop
}

func (r *run) initLine() initLine {
	h := r.a.Host
	var filter func(tool.Info) bool
	if r.ag != nil {
		filter = r.ag.Options().Tools
	}
	tools := []string{}
	for _, in := range h.Tools.Visible(filter) {
		tools = append(tools, claudemsg.ToolName(in.Name))
	}
	servers := []mcpServerStatus{}
	if r.a.MCP != nil {
		for _, s := range r.a.MCP.Servers() {
			servers = append(servers, mcpServerStatus{Name: s.Name, Status: claudeMCPStatus(s.State), Source: s.Source})
		}
	}
	agents := []string{}
	for _, d := range r.agentDefinitions() {
		agents = append(agents, d.Name)
	}
	mode := string(permission.ModeDefault)
	if r.a.Permission != nil {
		mode = string(r.a.Permission.SessionMode(r.sid))
	}
	keySource := "none"
	if strings.HasPrefix(r.a.Model, "anthropic/") {
		keySource = "ANTHROPIC_API_KEY"
	}
	skills := []string{}
	if r.a.Skills != nil {
		for _, k := range r.a.Skills.For(r.sess.Cwd()).All() {
			skills = append(skills, k.Name)
		}
	}
	return initLine{Type: "system", Subtype: "init", CWD: r.sess.Cwd(), SessionID: r.sid, Tools: tools, MCPServers: servers,
		Model: r.currentModel(), PermissionMode: mode, SlashCommands: r.slashCommands(), APIKeySource: keySource,
		ClaudeCodeVersion: r.o.Version, OutputStyle: "default", Agents: agents, Skills: skills, Plugins: []any{},
		UUID: claudemsg.UUID(r.sid, "init", fmt.Sprint(r.sess.Len()))}
}

// slashCommands are the commands a prompt may be: /compact and the
// workspace's custom commands.
func (r *run) slashCommands() []string {
	out := []string{"compact"}
	if c := r.a.Commands; c != nil {
		for _, cmd := range c.For(r.sess.Cwd()).All() {
			out = append(out, cmd.Name)
		}
	}
	return out
}

func claudeMCPStatus(s mcp.State) string {
	switch s {
	case mcp.StateConnected:
		return "connected"
	case mcp.StateIdle, mcp.StateConnecting, mcp.StateRestarting:
		return "pending"
	case mcp.StateDisabled, mcp.StateUntrusted:
		return "disabled"
	}
	return "failed"
}

// oneShot sends the prompt, waits for the turn and writes the outcome.
func (r *run) oneShot(ctx context.Context, start time.Time) (int, error) {
	if err := r.send(ctx, r.o.Prompt); err != nil {
		return app.ExitError, err
	}
	if err := r.waitIdle(ctx); err != nil {
		return app.ExitError, err
	}
	res, ok := r.lastResult()
	if !ok {
		return app.ExitError, errors.New("the prompt ended without a turn")
	}
	res.DurationMS = r.o.Now().Sub(start).Milliseconds()
	res = r.checkSaved(ctx, res)
	var runErr error
	if res.code == app.ExitNotSaved {
		// Said on stderr in every format: a script reading only stdout
		// must not take the run for saved.
		runErr = notSaved(errorText(res))
	}
	if res.ErrorKind == "lease_lost" {
		runErr = errors.New(errorText(res))
	}
	return finalOutput(r.w, r.o.OutputFormat, res, runErr, func() any { return r.nativeResult(res) })
}

// finalOutput writes what a one-shot run ends with in its format (the
// answer, the result object, dsh's own result line; stream-json wrote its
// result already) and returns the exit code and the stderr line.
func finalOutput(w *lineWriter, format string, res Result, runErr error, native func() any) (int, error) {
	switch format {
	case FormatText:
		if res.Result != nil && *res.Result != "" && !(res.IsError && res.end == session.EndError) {
			if err := w.raw([]byte(*res.Result)); err != nil {
				return app.ExitError, fmt.Errorf("writing the answer: %v", err)
			}
		}
		if res.StructuredOutput != nil {
			_ = w.raw(res.StructuredOutput)
		}
		if runErr != nil {
			return res.code, runErr
		}
		if res.IsError {
			return res.code, errors.New(errorText(res))
		}
	case FormatJSON:
		if err := w.write(res); err != nil {
			return app.ExitError, fmt.Errorf("writing the result: %v", err)
		}
	case FormatEvents:
		if err := w.write(native()); err != nil {
			return app.ExitError, fmt.Errorf("writing the result: %v", err)
		}
	}
	if w.err != nil {
		return app.ExitError, fmt.Errorf("writing the output: %v", w.err)
	}
	return res.code, runErr
}

// checkSaved claims success only for a saved session: the turn's last
// events (its turn/end) may still have failed to reach the store. A run
// whose session could not be saved reports it (in stream-json with one
// more result line).
func (r *run) checkSaved(ctx context.Context, res Result) Result {
	err := r.a.Host.Sessions.FlushSession(context.WithoutCancel(ctx), r.sess)
	if lost := r.a.LeaseLost(r.sess.ID()); lost != nil {
		// Another host took the session over: what this run did after
		// that is not recorded, and the new holder closes the turn as
		// interrupted. Not a full disk: say what happened.
		res.Subtype, res.IsError, res.Result, res.StructuredOutput = SubtypeErrorExecution, true, nil, nil
		res.Errors, res.ErrorKind, res.TerminalReason = []string{lost.Error()}, "lease_lost", "turn_setup_failed"
		res.code, res.end = app.ExitError, session.EndError
		if r.o.OutputFormat == FormatStreamJSON {
			_ = r.w.write(res)
		}
		return res
	}
	if err == nil || res.ErrorKind == "not_saved" {
		return res
	}
	res.Subtype, res.IsError, res.Result, res.StructuredOutput = SubtypeErrorExecution, true, nil, nil
	res.Errors, res.ErrorKind, res.TerminalReason = []string{err.Error()}, "not_saved", "turn_setup_failed"
	res.code, res.end = app.ExitNotSaved, session.EndError
	if r.o.OutputFormat == FormatStreamJSON {
		_ = r.w.write(res)
	}
	return res
}

// errorText is the one line a failed turn reports on stderr.
func errorText(res Result) string {
	if len(res.Errors) > 0 {
		return strings.Join(res.Errors, "; ")
	}
	if res.Result != nil && *res.Result != "" {
		return *res.Result
	}
	return "turn ended: " + res.end
}

// send queues a prompt, or runs a slash command.
func (r *run) send(ctx context.Context, prompt string) error {
	return r.sendBlocks(ctx, []llm.Block{llm.Text(prompt)})
}

func (r *run) sendBlocks(ctx context.Context, content []llm.Block) error {
	if t := strings.TrimSpace(llm.TextOf(content)); len(content) == 1 && strings.HasPrefix(t, "/compact") && r.a.Compactor != nil {
		focus := strings.TrimSpace(strings.TrimPrefix(t, "/compact"))
		_, err := r.a.Compactor.Compact(ctx, r.ag, focus)
		return err
	}
	if c := r.a.Commands; c != nil && len(content) == 1 && content[0].Type == llm.BlockText {
		p, err := c.Prepare(ctx, r.ag, content[0].Text)
		switch {
		case errors.Is(err, commands.ErrNotCommand):
		case err != nil:
			return err
		default:
			for _, w := range p.Warnings {
				fmt.Fprintf(r.o.Err, "dsh: %s\n", w)
			}
			return r.ag.Send(ctx, p.Content, p.Source)
		}
	}
	return r.ag.Send(ctx, content, llm.Source{})
}

// waitIdle waits for the agent to finish what it was given; an interrupt
// (ctx) cancels the running turn first.
func (r *run) waitIdle(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- r.ag.WhenIdle(context.WithoutCancel(ctx)) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		r.ag.Cancel("interrupted")
		return <-done
	}
}

func (r *run) lastResult() (Result, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.results) == 0 {
		return Result{}, false
	}
	return r.results[len(r.results)-1], true
}

// NativeResult is the last line of the events format: dsh's own summary
// of the run (its end reasons, steps and camelCase usage).
type NativeResult struct {
	Type       string    `json:"type"`
	Subtype    string    `json:"subtype"`
	IsError    bool      `json:"is_error"`
	Result     string    `json:"result"`
	SessionID  string    `json:"session_id"`
	StopReason string    `json:"stop_reason"`
	Error      string    `json:"error,omitempty"`
	Turns      int       `json:"num_turns"`
	Steps      int       `json:"num_steps"`
	DurationMS int64     `json:"duration_ms"`
	Usage      llm.Usage `json:"usage"`
	CostUSD    float64   `json:"total_cost_usd"`
	Model      string    `json:"model"`
}

func (r *run) nativeResult(res Result) NativeResult {
	r.mu.Lock()
	turns := len(r.results)
	r.mu.Unlock()
	return nativeOf(res, r.sid, r.currentModel(), turns)
}

// nativeOf is dsh's own result line for a turn's result.
func nativeOf(res Result, sid, model string, turns int) NativeResult {
	n := NativeResult{Type: "result", Subtype: res.Subtype, IsError: res.IsError, SessionID: sid, StopReason: res.end,
		Turns: turns, Steps: res.NumTurns, DurationMS: res.DurationMS, CostUSD: res.TotalCostUSD, Model: model}
	if res.Result != nil {
		n.Result = *res.Result
	}
	if res.IsError {
		n.Error = errorText(res)
		if res.end == session.EndError {
			n.Result = ""
		}
	}
	n.Usage = llm.Usage{InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens,
		CacheReadTokens: res.Usage.CacheReadInputTokens, CacheWriteTokens: res.Usage.CacheCreationInputTokens}
	return n
}
