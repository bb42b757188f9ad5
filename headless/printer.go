package headless

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/internal/claudemsg"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/pricing"
	"github.com/dshq/dsh/session"
)

// PrinterOptions configure a [Printer].
type PrinterOptions struct {
	// Format is one of [OutputFormats].
	Format string
	Out    io.Writer
	// SessionID, Cwd, Model and PermissionMode describe the session (the
	// init line, message ids, the model an assistant message that names
	// none ran on).
	SessionID, Cwd, Model, PermissionMode string
	// IncludePartialMessages adds stream_event lines (stream-json only).
	IncludePartialMessages bool
	// Prices prices the usage (nil: the built-in list prices).
	Prices *pricing.Table
	// Version is reported as claude_code_version.
	Version string
}

// Printer writes a session's events, as they arrive from where the session
// runs (a dsh serve's event stream), in dsh -p's output formats: what
// `dsh remote -p` prints for a turn is what `dsh -p` prints for it, from
// the same events and the same conversions. It knows only what the events
// say, so the init line lists no tools, MCP servers or skills.
type Printer struct {
	o       PrinterOptions
	w       *lineWriter
	conv    claudemsg.Converter
	partial partials
	costs   costs
	stats   *turnStats
	calls   map[llm.CallID]session.ToolCall
	results []Result
}

// NewPrinter checks the options and returns a printer.
func NewPrinter(o PrinterOptions) (*Printer, error) {
	if o.Format == "" {
		o.Format = FormatText
	}
	if !slices.Contains(OutputFormats, o.Format) {
		return nil, fmt.Errorf("unknown --output-format %q (want %s)", o.Format, strings.Join(OutputFormats, ", "))
	}
	if o.IncludePartialMessages && o.Format != FormatStreamJSON {
		return nil, errors.New("--include-partial-messages requires --output-format stream-json")
	}
	p := &Printer{o: o, w: &lineWriter{out: o.Out}, calls: map[llm.CallID]session.ToolCall{}}
	p.conv = claudemsg.Converter{Session: o.SessionID, Model: o.Model}
	p.partial = partials{session: o.SessionID, model: o.Model}
	p.costs.prices = o.Prices
	return p, nil
}

// Event handles one event of the session; it reports whether the event
// ended a turn.
func (p *Printer) Event(e session.Event) bool {
	if p.o.Format == FormatEvents {
		_ = p.w.write(e)
	}
	stream := p.o.Format == FormatStreamJSON
	switch e.Type {
	case session.TypeTurnStart:
		ts, _ := session.Decode[session.TurnStart](e)
		p.stats = &turnStats{turn: ts.Turn, startMS: e.Time}
		if stream && ts.Trigger.Kind != session.TriggerInjection {
			_ = p.w.write(p.initLine(e.Seq))
		}
	case session.TypeStepStart:
		if p.stats != nil {
			p.stats.steps++
			p.stats.stepStart = e.Time
		}
	case session.TypeAssistantChunk:
		if stream && p.o.IncludePartialMessages {
			if c, err := session.Decode[session.AssistantChunk](e); err == nil {
				for i, ev := range p.partial.chunk(c) {
					_ = p.w.write(streamEventLine{Type: "stream_event", Event: ev, UUID: chunkUUID(p.o.SessionID, e.Seq, i), SessionID: p.o.SessionID})
				}
			}
		}
	case session.TypeAssistantMessage:
		am, err := session.Decode[session.AssistantMessage](e)
		if err != nil {
			return false
		}
		if p.stats != nil {
			p.stats.answer(e, am, cmpOr(am.Model, p.o.Model), &p.costs)
		}
		if stream {
			for _, en := range p.conv.Event(e) {
				_ = p.w.write(assistantLine{Type: "assistant", Message: en.Assistant, UUID: en.UUID, SessionID: p.o.SessionID})
			}
		}
	case session.TypeToolCall:
		if tc, err := session.Decode[session.ToolCall](e); err == nil {
			p.calls[tc.CallID] = tc
		}
	case session.TypeApprovalAnswer:
		// A refused question is a permission denial of the result.
		if an, err := session.Decode[session.ApprovalAnswer](e); err == nil && !an.Allow && p.stats != nil {
			tc := p.calls[an.CallID]
			p.stats.denials = append(p.stats.denials, Denial{ToolName: claudemsg.ToolName(tc.Name), ToolUseID: string(an.CallID),
				ToolInput: claudemsg.ToolInput(tc.Name, claudemsg.Input(tc.Arguments))})
		}
	case session.TypeToolResult:
		if stream {
			for _, en := range p.conv.Event(e) {
				_ = p.w.write(userLine{Type: "user", Message: en.User, UUID: en.UUID, SessionID: p.o.SessionID})
			}
		}
	case session.TypeTurnEnd:
		te, err := session.Decode[session.TurnEnd](e)
		if err != nil {
			return false
		}
		st := p.stats
		if st == nil {
			st = &turnStats{turn: te.Turn, startMS: e.Time}
		}
		p.stats = nil
		clear(p.calls)
		res := buildResult(st, te, p.o.SessionID, &p.costs, max(e.Time-st.startMS, 0))
		p.results = append(p.results, res)
		if stream && te.Reason.Kind == session.EndError {
			_ = p.w.write(errorLine(p.o.SessionID, p.o.Model, e.Seq, te.Reason))
		}
		if stream {
			_ = p.w.write(res)
		}
		return true
	}
	return false
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (p *Printer) initLine(seq int64) initLine {
	keySource := "none"
	if strings.HasPrefix(p.o.Model, "anthropic/") {
		keySource = "ANTHROPIC_API_KEY"
	}
	mode := cmpOr(p.o.PermissionMode, "default")
	return initLine{Type: "system", Subtype: "init", CWD: p.o.Cwd, SessionID: p.o.SessionID, Tools: []string{}, MCPServers: []mcpServerStatus{},
		Model: p.o.Model, PermissionMode: mode, SlashCommands: []string{"compact"}, APIKeySource: keySource,
		ClaudeCodeVersion: p.o.Version, OutputStyle: "default", Agents: []string{}, Skills: []string{}, Plugins: []any{},
		UUID: claudemsg.UUID(p.o.SessionID, "init", fmt.Sprint(seq))}
}

// Finish writes what the run ends with (as dsh -p does after its turn) and
// returns the exit code and, when set, the line for stderr. durationMS is
// the whole run's wall time.
func (p *Printer) Finish(durationMS int64) (int, error) {
	if len(p.results) == 0 {
		return app.ExitError, errors.New("the prompt ended without a turn")
	}
	res := p.results[len(p.results)-1]
	res.DurationMS = durationMS
	native := func() any { return nativeOf(res, p.o.SessionID, p.o.Model, len(p.results)) }
	return finalOutput(p.w, p.o.Format, res, nil, native)
}
