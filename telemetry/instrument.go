package telemetry

import (
	"context"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/pricing"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

// scopeName is the instrumentation scope of every span and instrument.
const scopeName = "github.com/dshq/dsh/telemetry"

// The GenAI semantic conventions' attribute names (semconv 1.37 and the
// cache-token names added after it).
const (
	attrOperation    = "gen_ai.operation.name"
	attrProvider     = "gen_ai.provider.name"
	attrRequestModel = "gen_ai.request.model"
	attrRespModel    = "gen_ai.response.model"
	attrFinish       = "gen_ai.response.finish_reasons"
	attrInputTokens  = "gen_ai.usage.input_tokens"
	attrOutputTokens = "gen_ai.usage.output_tokens"
	attrCacheRead    = "gen_ai.usage.cache_read.input_tokens"
	attrCacheWrite   = "gen_ai.usage.cache_creation.input_tokens"
	attrConversation = "gen_ai.conversation.id"
	attrAgentName    = "gen_ai.agent.name"
	attrToolName     = "gen_ai.tool.name"
	attrToolCallID   = "gen_ai.tool.call.id"
	attrToolType     = "gen_ai.tool.type"
	attrTokenType    = "gen_ai.token.type"
	attrMaxTokens    = "gen_ai.request.max_tokens"
	attrTemperature  = "gen_ai.request.temperature"
	attrErrorType    = "error.type"
)

// Plugin instruments the host while a [Runtime] is active: a span for
// every turn (invoke_agent), step, model call (chat) and tool call
// (execute_tool), nested in that order, and the metrics beside them.
// Turns and steps are read from the session log's own events, model calls
// on llm/stream and tool calls on tools/execute, so a span covers exactly
// the work (a tool's span starts after its approval).
func Plugin() core.Plugin {
	return func(_ context.Context, h *core.Host, scope *kernel.Scope) error {
		if !Active() {
			return nil
		}
		in := newInstruments()
		if err := scope.Add(h.Sessions.Appended.Listen(in.event)); err != nil {
			return err
		}
		if err := scope.Add(h.LLM.StreamPoint.Use(in.stream)); err != nil {
			return err
		}
		if err := scope.Add(h.Tools.Wrap.Use(in.tool)); err != nil {
			return err
		}
		// A session the host drops mid-turn (a killed agent, a closed app)
		// still ends its spans.
		return scope.Add(in.endAll)
	}
}

// instruments holds the tracer, the meters and the open spans by session.
type instruments struct {
	tracer trace.Tracer

	tokenUsage metric.Int64Histogram
	opDuration metric.Float64Histogram
	tokens     metric.Int64Counter
	cost       metric.Float64Counter
	turns      metric.Int64Counter
	turnTime   metric.Float64Histogram
	toolCalls  metric.Int64Counter
	toolTime   metric.Float64Histogram
	errors     metric.Int64Counter

	// mu guards only the map: it is written at a turn's start and end and
	// read-locked for the lookups of every other step, message, model and
	// tool call. Each session's spans are under the session's own lock, so
	// a holder descheduled mid-event (span and metric work, a payload's
	// decode) stalls its own session, not every session in the process.
	mu   sync.RWMutex
	open map[session.ID]*openSession
}

// openSession is a session's open turn and step.
type openSession struct {
	// mu guards the fields below: a session's events arrive in order, but
	// its parallel tool calls, its subagents' turns (which nest under its
	// current span) and endAll reach it from other goroutines.
	mu sync.Mutex
	// closed is set once the turn is ended and counted, so an event that
	// looked the session up just before its turn was closed (by endAll)
	// neither counts it again nor opens a step no one will end.
	closed    bool
	parent    session.ID
	turn      trace.Span
	turnCtx   context.Context
	turnStart time.Time
	step      trace.Span
	stepCtx   context.Context
	usage     llm.Usage
	// tools are the tool calls running, by call id: a subagent's turn
	// nests under the call that started it.
	tools map[llm.CallID]context.Context
}

func newInstruments() *instruments {
	m := otel.Meter(scopeName)
	in := &instruments{tracer: otel.Tracer(scopeName), open: map[session.ID]*openSession{}}
	// Errors creating an instrument give a no-op one (the SDK logs them
	// through otel's handler): telemetry never stops a run.
	in.tokenUsage, _ = m.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"),
		metric.WithDescription("Tokens used per model call, by gen_ai.token.type (input, output)"),
		metric.WithExplicitBucketBoundaries(1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576))
	in.opDuration, _ = m.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of model calls, first byte to last chunk"))
	in.tokens, _ = m.Int64Counter("dsh.tokens", metric.WithUnit("{token}"),
		metric.WithDescription("Tokens by type: input, output, cache_read, cache_write, reasoning"))
	in.cost, _ = m.Float64Counter("dsh.cost.usd", metric.WithDescription("Estimated cost of model calls in US dollars (llm/pricing)"))
	in.turns, _ = m.Int64Counter("dsh.turns", metric.WithDescription("Turns ended, by end reason"))
	in.turnTime, _ = m.Float64Histogram("dsh.turn.duration", metric.WithUnit("s"), metric.WithDescription("Duration of turns"))
	in.toolCalls, _ = m.Int64Counter("dsh.tool.calls", metric.WithDescription("Tool calls run, by tool and outcome"))
	in.toolTime, _ = m.Float64Histogram("dsh.tool.duration", metric.WithUnit("s"), metric.WithDescription("Duration of tool calls (after approval)"))
	in.errors, _ = m.Int64Counter("dsh.errors", metric.WithDescription("Failures by kind: model, tool, turn"))
	return in
}

// splitModel reads dsh's "provider/model" references.
func splitModel(ref string) (provider, model string) {
	if p, m, ok := strings.Cut(ref, "/"); ok {
		return p, m
	}
	return "", ref
}

// event follows the session log: turn/start opens the turn's span,
// step/start and step/end bracket a step's, turn/end closes both. Payloads
// are decoded before any lock is taken.
func (in *instruments) event(_ context.Context, a session.Appended) error {
	id := a.Session.ID()
	switch a.Event.Type {
	case session.TypeTurnStart:
		ts, _ := session.Decode[session.TurnStart](a.Event)
		if old := in.take(id); old != nil {
			old.mu.Lock()
			in.closeTurn(old, "interrupted", time.Now())
			old.mu.Unlock()
		}
		o := &openSession{parent: a.Session.Header().ParentSession, tools: map[llm.CallID]context.Context{}}
		parent := context.Background()
		if p := in.get(o.parent); p != nil {
			p.mu.Lock()
			parent = p.current()
			p.mu.Unlock()
		}
		o.turnStart = time.Now()
		o.turnCtx, o.turn = in.tracer.Start(parent, "invoke_agent dsh", trace.WithTimestamp(o.turnStart),
			trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
				attribute.String(attrOperation, "invoke_agent"),
				attribute.String(attrAgentName, "dsh"),
				attribute.String(attrConversation, string(id)),
				attribute.Int("dsh.turn", ts.Turn),
				attribute.String("dsh.turn.trigger", ts.Trigger.Kind)))
		in.mu.Lock()
		in.open[id] = o
		in.mu.Unlock()
	case session.TypeStepStart:
		o := in.get(id)
		if o == nil {
			return nil
		}
		sb, _ := session.Decode[session.StepBoundary](a.Event)
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.closed {
			return nil
		}
		if o.step != nil {
			o.step.End()
		}
		o.stepCtx, o.step = in.tracer.Start(o.turnCtx, "step", trace.WithAttributes(
			attribute.String(attrConversation, string(id)),
			attribute.Int("dsh.turn", sb.Turn), attribute.Int("dsh.step", sb.Step)))
	case session.TypeStepEnd:
		o := in.get(id)
		if o == nil {
			return nil
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.step != nil {
			o.step.End()
			o.step, o.stepCtx = nil, nil
		}
	case session.TypeAssistantMessage:
		o := in.get(id)
		if o == nil {
			return nil
		}
		m, err := session.Decode[session.AssistantMessage](a.Event)
		if err != nil || m.Usage == nil {
			return nil
		}
		o.mu.Lock()
		o.usage.Add(*m.Usage)
		o.mu.Unlock()
	case session.TypeTurnEnd:
		o := in.take(id)
		if o == nil {
			return nil
		}
		te, _ := session.Decode[session.TurnEnd](a.Event)
		o.mu.Lock()
		defer o.mu.Unlock()
		if te.Reason.Kind == session.EndError {
			o.turn.SetStatus(codes.Error, te.Reason.Message)
		}
		in.closeTurn(o, te.Reason.Kind, time.Now())
	}
	return nil
}

// get is the open turn of a session, nil when it has none.
func (in *instruments) get(id session.ID) *openSession {
	in.mu.RLock()
	defer in.mu.RUnlock()
	return in.open[id]
}

// take removes a session's open turn and returns it: only its taker ends
// and counts it.
func (in *instruments) take(id session.ID) *openSession {
	in.mu.Lock()
	defer in.mu.Unlock()
	o := in.open[id]
	delete(in.open, id)
	return o
}

// current is the innermost open span of a session: a running tool call,
// else the step, else the turn (o.mu held).
func (o *openSession) current() context.Context {
	for _, c := range o.tools {
		return c
	}
	if o.stepCtx != nil {
		return o.stepCtx
	}
	return o.turnCtx
}

// closeTurn ends a turn's open spans and counts it (o.mu held, o taken
// out of the map by the caller).
func (in *instruments) closeTurn(o *openSession, reason string, now time.Time) {
	if o.closed {
		return
	}
	o.closed = true
	if o.step != nil {
		o.step.End(trace.WithTimestamp(now))
		o.step, o.stepCtx = nil, nil
	}
	o.turn.SetAttributes(attribute.String("dsh.turn.end_reason", reason),
		attribute.Int(attrInputTokens, o.usage.PromptTokens()),
		attribute.Int(attrOutputTokens, o.usage.OutputTokens))
	o.turn.End(trace.WithTimestamp(now))
	ctx := context.Background()
	attrs := metric.WithAttributes(attribute.String("dsh.end_reason", reason))
	in.turns.Add(ctx, 1, attrs)
	in.turnTime.Record(ctx, now.Sub(o.turnStart).Seconds(), attrs)
	if reason == session.EndError || reason == session.EndInterrupted {
		in.errors.Add(ctx, 1, metric.WithAttributes(attribute.String("kind", "turn")))
	}
}

// endAll ends every open span (the plugin is unloading).
func (in *instruments) endAll() {
	in.mu.Lock()
	all := in.open
	in.open = map[session.ID]*openSession{}
	in.mu.Unlock()
	now := time.Now()
	for _, o := range all {
		o.mu.Lock()
		in.closeTurn(o, "interrupted", now)
		o.mu.Unlock()
	}
}

// parentOf is the span a session's next model or tool call nests under.
func (in *instruments) parentOf(ctx context.Context, id string) context.Context {
	o := in.get(session.ID(id))
	if o == nil {
		return ctx
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return ctx
	}
	if o.stepCtx != nil {
		return o.stepCtx
	}
	return o.turnCtx
}

// stream wraps a model call in a chat span that ends with its stream.
func (in *instruments) stream(ctx context.Context, req *llm.Request, next kernel.Next[*llm.Request, llm.Stream]) (llm.Stream, error) {
	provider, model := splitModel(req.Model)
	attrs := []attribute.KeyValue{attribute.String(attrOperation, "chat"), attribute.String(attrProvider, provider),
		attribute.String(attrRequestModel, model)}
	start := time.Now()
	_, span := in.tracer.Start(in.parentOf(ctx, req.SessionID), "chat "+model, trace.WithTimestamp(start),
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	if req.MaxTokens > 0 {
		span.SetAttributes(attribute.Int(attrMaxTokens, req.MaxTokens))
	}
	if req.Temperature != nil {
		span.SetAttributes(attribute.Float64(attrTemperature, *req.Temperature))
	}
	s, err := next(ctx, req)
	if err != nil {
		in.endModel(span, req.Model, attrs, start, nil, nil, err)
		return nil, err
	}
	return func(yield func(llm.Chunk, error) bool) {
		var usage *llm.Usage
		var finish *llm.FinishReason
		var failed error
		defer func() { in.endModel(span, req.Model, attrs, start, usage, finish, failed) }()
		for c, err := range s {
			if err != nil {
				failed = err
			} else if c.Type == llm.ChunkUsage && c.Usage != nil {
				u := *c.Usage
				usage = &u
			} else if c.Type == llm.ChunkFinish {
				f := llm.FinishReason{Kind: llm.FinishStop}
				if c.Finish != nil {
					f = *c.Finish
				}
				finish = &f
			}
			if !yield(c, err) {
				if finish == nil && failed == nil {
					finish = &llm.FinishReason{Kind: llm.FinishAborted}
				}
				return
			}
		}
	}, nil
}

// endModel records a model call's outcome on its span and in the metrics.
func (in *instruments) endModel(span trace.Span, ref string, attrs []attribute.KeyValue, start time.Time, usage *llm.Usage, finish *llm.FinishReason, err error) {
	now := time.Now()
	ctx := context.Background()
	_, model := splitModel(ref)
	span.SetAttributes(attribute.String(attrRespModel, model))
	errType := ""
	switch {
	case err != nil:
		errType = "stream"
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	case finish != nil && finish.Kind == llm.FinishError:
		errType = finish.Code
		if errType == "" {
			errType = "error"
		}
		span.SetStatus(codes.Error, finish.Message)
	}
	if finish != nil {
		span.SetAttributes(attribute.StringSlice(attrFinish, []string{finish.Kind}))
	}
	mattrs := append([]attribute.KeyValue{attribute.String(attrRespModel, model)}, attrs...)
	if errType != "" {
		span.SetAttributes(attribute.String(attrErrorType, errType))
		mattrs = append(mattrs, attribute.String(attrErrorType, errType))
		in.errors.Add(ctx, 1, metric.WithAttributes(attribute.String("kind", "model")))
	}
	if usage != nil {
		span.SetAttributes(attribute.Int(attrInputTokens, usage.PromptTokens()), attribute.Int(attrOutputTokens, usage.OutputTokens),
			attribute.Int(attrCacheRead, usage.CacheReadTokens), attribute.Int(attrCacheWrite, usage.CacheWriteTokens))
		in.tokenUsage.Record(ctx, int64(usage.PromptTokens()), metric.WithAttributes(append(mattrs, attribute.String(attrTokenType, "input"))...))
		in.tokenUsage.Record(ctx, int64(usage.OutputTokens), metric.WithAttributes(append(mattrs, attribute.String(attrTokenType, "output"))...))
		byModel := attribute.String(attrRequestModel, model)
		for _, k := range []struct {
			typ string
			n   int
		}{{"input", usage.InputTokens}, {"output", usage.OutputTokens}, {"cache_read", usage.CacheReadTokens},
			{"cache_write", usage.CacheWriteTokens}, {"reasoning", usage.ReasoningTokens}} {
			if k.n > 0 {
				in.tokens.Add(ctx, int64(k.n), metric.WithAttributes(byModel, attribute.String("type", k.typ)))
			}
		}
		if usd, ok := pricing.Cost(ref, *usage); ok {
			in.cost.Add(ctx, usd, metric.WithAttributes(byModel))
		}
	}
	in.opDuration.Record(ctx, now.Sub(start).Seconds(), metric.WithAttributes(mattrs...))
	span.End(trace.WithTimestamp(now))
}

// tool wraps a tool's execution in an execute_tool span.
func (in *instruments) tool(ctx context.Context, call tool.Call, next kernel.Next[tool.Call, tool.Result]) (tool.Result, error) {
	sid := ""
	if call.Host != nil {
		sid = call.Host.SessionID()
	}
	start := time.Now()
	sctx, span := in.tracer.Start(in.parentOf(ctx, sid), "execute_tool "+call.Name, trace.WithTimestamp(start),
		trace.WithAttributes(attribute.String(attrOperation, "execute_tool"), attribute.String(attrToolName, call.Name),
			attribute.String(attrToolCallID, string(call.ID)), attribute.String(attrToolType, "function")))
	o := in.get(session.ID(sid))
	if o != nil {
		o.mu.Lock()
		o.tools[call.ID] = sctx
		o.mu.Unlock()
	}
	res, err := next(ctx, call)
	if o != nil {
		o.mu.Lock()
		delete(o.tools, call.ID)
		o.mu.Unlock()
	}
	outcome := "ok"
	switch {
	case err != nil:
		outcome = "error"
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	case res.IsError:
		outcome = "error"
		span.SetStatus(codes.Error, "the tool reported an error")
	}
	now := time.Now()
	attrs := metric.WithAttributes(attribute.String(attrToolName, call.Name), attribute.String("outcome", outcome))
	in.toolCalls.Add(context.Background(), 1, attrs)
	in.toolTime.Record(context.Background(), now.Sub(start).Seconds(), attrs)
	if outcome == "error" {
		span.SetAttributes(attribute.String(attrErrorType, "tool_error"))
		in.errors.Add(context.Background(), 1, metric.WithAttributes(attribute.String("kind", "tool")))
	}
	span.End(trace.WithTimestamp(now))
	return res, err
}
