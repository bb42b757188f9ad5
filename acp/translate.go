package acp

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/pricing"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

// TypeTodoWrite is the session event the todo_write tool appends; it
// becomes an ACP plan.
const TypeTodoWrite = "todo/write"

// toolLookup finds a tool for its presenters and kind. It is the tool
// registry in the server; tests pass a map.
type toolLookup interface {
	Get(name string) (tool.Tool, bool)
}

// translator maps one session's events to ACP session updates. The same
// translator type serves the live stream and session/load replay (with a
// fresh instance), so the two agree: everything it emits is derived from
// the log, never from live-only state, except for the client-terminal ids
// noted by the terminal executor.
type translator struct {
	cwd   string
	tools toolLookup
	// contextWindow returns a model's window (0: unknown) for usage updates.
	contextWindow func(model string) int
	// prices prices the session's usage; cost is its running total, which
	// usage updates carry (derived from the log like everything else).
	prices *pricing.Table
	cost   pricing.Tally
	// costPending says the cost of history the translator did not see is
	// still being summed (see [sess.accountHistory]): usage updates leave
	// the cost out until then rather than show a partial total.
	costPending bool
	// used and size are the newest usage update's (0: none yet).
	used, size int
	// replay echoes user messages (a live client already shows them).
	replay bool
	// zedTerminal renders terminal cards with Zed's _meta convention
	// (clientCapabilities._meta.terminal_output).
	zedTerminal bool

	calls map[llm.CallID]*callState
	order []llm.CallID // calls without a result yet, oldest first
	// streamed records the (turn, step) pairs whose text arrived as chunks.
	streamed map[[2]int]bool
}

// callState is what the translator remembers of one tool call.
type callState struct {
	name     string
	args     json.RawMessage // effective arguments (nil: not JSON)
	raw      string
	view     *tool.View
	kind     sdk.ToolKind
	title    string
	terminal bool // the call renders as a terminal
	started  bool // in_progress was sent
	done     bool
	// clientTerminal is the id of the client terminal the command ran in.
	clientTerminal string
}

func newTranslator(cwd string, tools toolLookup, window func(string) int) *translator {
	return &translator{cwd: cwd, tools: tools, contextWindow: window,
		calls: map[llm.CallID]*callState{}, streamed: map[[2]int]bool{}}
}

// translate returns the updates for one event (often none).
func (t *translator) translate(e session.Event) []sdk.SessionUpdate {
	switch e.Type {
	case session.TypeAssistantChunk:
		c, err := session.Decode[session.AssistantChunk](e)
		if err != nil {
			return nil
		}
		switch c.Chunk.Type {
		case llm.ChunkTextDelta:
			if c.Chunk.Text == "" {
				return nil
			}
			t.streamed[[2]int{c.Turn, c.Step}] = true
			return []sdk.SessionUpdate{sdk.UpdateAgentMessageText(c.Chunk.Text)}
		case llm.ChunkReasoningDelta:
			if c.Chunk.Text == "" {
				return nil
			}
			t.streamed[[2]int{c.Turn, c.Step}] = true
			return []sdk.SessionUpdate{sdk.UpdateAgentThoughtText(c.Chunk.Text)}
		}
	case session.TypeAssistantMessage:
		m, err := session.Decode[session.AssistantMessage](e)
		if err != nil {
			return nil
		}
		var out []sdk.SessionUpdate
		key := [2]int{m.Turn, m.Step}
		if !t.streamed[key] {
			// A message recorded without its stream (an imported or
			// non-streaming log): show its text all at once.
			for _, b := range m.Content {
				switch {
				case b.Type == llm.BlockText && b.Text != "":
					out = append(out, sdk.UpdateAgentMessageText(b.Text))
				case b.Type == llm.BlockReasoning && b.Text != "":
					out = append(out, sdk.UpdateAgentThoughtText(b.Text))
				}
			}
		}
		delete(t.streamed, key)
		if m.Usage != nil {
			t.cost.Add(t.prices, m.Model, *m.Usage)
		}
		if m.Usage != nil && t.contextWindow != nil {
			if size := t.contextWindow(m.Model); size > 0 {
				used := m.Usage.PromptTokens() + m.Usage.OutputTokens
				t.used, t.size = used, size
				out = append(out, t.usageUpdate())
			}
		}
		return out
	case session.TypeUserMessage:
		if !t.replay {
			return nil
		}
		m, err := session.Decode[session.Prompt](e)
		if err != nil || m.Source.OrUser().Kind != llm.SourceUser {
			return nil
		}
		var out []sdk.SessionUpdate
		for _, b := range m.Content {
			switch b.Type {
			case llm.BlockText:
				if b.Text != "" {
					out = append(out, sdk.UpdateUserMessageText(b.Text))
				}
			case llm.BlockImage:
				if cb, ok := imageContent(b); ok {
					out = append(out, sdk.UpdateUserMessage(cb))
				}
			}
		}
		return out
	case session.TypeToolCall:
		c, err := session.Decode[session.ToolCall](e)
		if err != nil {
			return nil
		}
		return []sdk.SessionUpdate{t.toolCall(c)}
	case session.TypeApprovalAnswer:
		a, err := session.Decode[session.ApprovalAnswer](e)
		if err != nil || !a.Allow {
			return nil
		}
		if u, ok := t.start(a.CallID); ok {
			return []sdk.SessionUpdate{u}
		}
	case session.TypeToolResult:
		r, err := session.Decode[session.ToolResult](e)
		if err != nil {
			return nil
		}
		return []sdk.SessionUpdate{t.toolResult(r)}
	case TypeTodoWrite:
		var p struct {
			Todos []session.TodoItem `json:"todos"`
		}
		if json.Unmarshal(e.Data, &p) != nil {
			return nil
		}
		entries := make([]sdk.PlanEntry, 0, len(p.Todos))
		for _, it := range p.Todos {
			st := sdk.PlanEntryStatus(it.Status)
			switch st {
			case sdk.PlanEntryStatusPending, sdk.PlanEntryStatusInProgress, sdk.PlanEntryStatusCompleted:
			default:
				st = sdk.PlanEntryStatusPending
			}
			entries = append(entries, sdk.PlanEntry{Content: it.Content, Priority: sdk.PlanEntryPriorityMedium, Status: st})
		}
		return []sdk.SessionUpdate{sdk.UpdatePlan(entries...)}
	case session.TypeTurnEnd:
		// Calls cut off by the turn's end (cancel, crash, dispose) never get
		// a result; close their cards.
		var out []sdk.SessionUpdate
		for _, id := range t.order {
			cs := t.calls[id]
			if cs == nil || cs.done {
				continue
			}
			cs.done = true
			st := sdk.ToolCallStatusFailed
			out = append(out, sdk.SessionUpdate{ToolCallUpdate: &sdk.SessionToolCallUpdate{
				SessionUpdate: "tool_call_update", ToolCallId: sdk.ToolCallId(id), Status: &st,
				Content: []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock("The tool call was interrupted."))},
			}})
		}
		t.order = t.order[:0]
		clear(t.calls)
		clear(t.streamed)
		return out
	}
	return nil
}

// usageUpdate is the usage update for the newest usage seen.
func (t *translator) usageUpdate() sdk.SessionUpdate {
	uu := &sdk.SessionUsageUpdate{SessionUpdate: "usage_update", Used: t.used, Size: t.size}
	if !t.costPending && (!t.cost.Unpriced || t.cost.USD > 0) {
		// An unpriced model's cost is unknown, not zero: left out.
		uu.Cost = &sdk.Cost{Amount: t.cost.USD, Currency: "USD"}
	}
	return sdk.SessionUpdate{UsageUpdate: uu}
}

// start marks a call as running and returns its in_progress update, once.
func (t *translator) start(id llm.CallID) (sdk.SessionUpdate, bool) {
	cs := t.calls[id]
	if cs == nil || cs.started || cs.done {
		return sdk.SessionUpdate{}, false
	}
	cs.started = true
	st := sdk.ToolCallStatusInProgress
	return sdk.SessionUpdate{ToolCallUpdate: &sdk.SessionToolCallUpdate{
		SessionUpdate: "tool_call_update", ToolCallId: sdk.ToolCallId(id), Status: &st,
	}}, true
}

// clientTerminal records that a call's command runs in a client terminal
// and returns the update that embeds it in the card.
func (t *translator) clientTerminal(id llm.CallID, terminalID string) (sdk.SessionUpdate, bool) {
	cs := t.calls[id]
	if cs == nil || cs.done {
		return sdk.SessionUpdate{}, false
	}
	cs.clientTerminal = terminalID
	return sdk.SessionUpdate{ToolCallUpdate: &sdk.SessionToolCallUpdate{
		SessionUpdate: "tool_call_update", ToolCallId: sdk.ToolCallId(id),
		Content: []sdk.ToolCallContent{sdk.ToolTerminalRef(terminalID)},
	}}, true
}

// pendingCall returns the permission request's view of a call.
func (t *translator) pendingCall(id llm.CallID) (sdk.ToolCallUpdate, bool) {
	cs := t.calls[id]
	if cs == nil {
		return sdk.ToolCallUpdate{}, false
	}
	u := t.callCard(id, cs)
	st := sdk.ToolCallStatusPending
	kind := u.Kind
	title := u.Title
	return sdk.ToolCallUpdate{ToolCallId: u.ToolCallId, Title: &title, Kind: &kind, Status: &st,
		Content: u.Content, Locations: u.Locations, RawInput: u.RawInput}, true
}

func (t *translator) toolCall(c session.ToolCall) sdk.SessionUpdate {
	cs := &callState{name: c.Name, raw: c.Arguments}
	call := tool.NewCall(c.CallID, c.Name, c.Arguments, nil)
	cs.args = call.Args
	tl, ok := t.lookup(c.Name)
	var info tool.Info
	if ok {
		info = safeInfo(tl)
		if p, ok := tl.(tool.CallPresenter); ok && cs.args != nil {
			cs.view = presentCall(p, cs.args)
		}
	}
	cs.kind = toolKind(info.Kind, c.Name)
	if cs.view != nil && cs.view.Kind != "" {
		cs.kind = sdk.ToolKind(cs.view.Kind)
	}
	cs.title = c.Name
	if cs.view != nil && cs.view.Title != "" {
		cs.title = cs.view.Title
	}
	cs.terminal = cs.view != nil && cs.view.Command != ""
	if old := t.calls[c.CallID]; old == nil {
		t.order = append(t.order, c.CallID)
	}
	t.calls[c.CallID] = cs
	u := t.callCard(c.CallID, cs)
	return sdk.SessionUpdate{ToolCall: &u}
}

// callCard renders a call's card (status pending).
func (t *translator) callCard(id llm.CallID, cs *callState) sdk.SessionUpdateToolCall {
	u := sdk.SessionUpdateToolCall{
		SessionUpdate: "tool_call", ToolCallId: sdk.ToolCallId(id), Kind: cs.kind,
		Status: sdk.ToolCallStatusPending, RawInput: rawInput(cs),
	}
	v := cs.view
	var firstPath string
	if v != nil {
		for _, l := range v.Locations {
			loc := sdk.ToolCallLocation{Path: l.Path}
			if l.Line > 0 {
				line := l.Line
				loc.Line = &line
			}
			u.Locations = append(u.Locations, loc)
		}
		if len(v.Locations) > 0 {
			firstPath = v.Locations[0].Path
		} else if len(v.Diffs) > 0 {
			firstPath = v.Diffs[0].Path
		}
		for _, d := range v.Diffs {
			u.Content = append(u.Content, diffContent(d))
		}
		if v.Text != "" && len(v.Diffs) == 0 {
			u.Content = append(u.Content, sdk.ToolContent(sdk.TextBlock(v.Text)))
		}
		if cs.terminal && t.zedTerminal && cs.clientTerminal == "" {
			u.Content = append(u.Content, sdk.ToolTerminalRef(string(id)))
			u.Meta = map[string]any{"terminal_info": map[string]any{"terminal_id": string(id), "cwd": t.resolveCwd(v.Cwd)}}
		}
	}
	u.Title = t.relativize(cs.title, firstPath)
	return u
}

func (t *translator) toolResult(r session.ToolResult) sdk.SessionUpdate {
	st := sdk.ToolCallStatusCompleted
	if r.IsError {
		st = sdk.ToolCallStatusFailed
	}
	u := &sdk.SessionToolCallUpdate{SessionUpdate: "tool_call_update", ToolCallId: sdk.ToolCallId(r.CallID), Status: &st}
	cs := t.calls[r.CallID]
	raw := textContents(r.Content)
	if cs == nil {
		u.Content = raw
		return sdk.SessionUpdate{ToolCallUpdate: u}
	}
	cs.done = true
	var view *tool.View
	if tl, ok := t.lookup(cs.name); ok && cs.args != nil {
		if p, ok := tl.(tool.ResultPresenter); ok {
			view = presentResult(p, cs.args, tool.Result{Content: r.Content, Meta: r.Meta, IsError: r.IsError})
		}
	}
	switch {
	case view == nil:
		u.Content = raw
	case len(view.Diffs) > 0:
		for _, d := range view.Diffs {
			u.Content = append(u.Content, diffContent(d))
		}
		if view.Title != "" {
			title := t.relativize(view.Title, view.Diffs[0].Path)
			u.Title = &title
		}
	case cs.terminal && view.Command != "":
		switch {
		case cs.clientTerminal != "":
			// The editor already shows the command's own terminal.
			u.Content = []sdk.ToolCallContent{sdk.ToolTerminalRef(cs.clientTerminal)}
		case t.zedTerminal:
			meta := map[string]any{"terminal_output": map[string]any{"terminal_id": string(r.CallID), "data": view.Output}}
			if view.ExitCode != nil {
				meta["terminal_exit"] = map[string]any{"terminal_id": string(r.CallID), "exit_code": *view.ExitCode, "signal": nil}
			} else if sig, ok := strings.CutPrefix(view.Text, "killed by signal: "); ok {
				meta["terminal_exit"] = map[string]any{"terminal_id": string(r.CallID), "exit_code": nil, "signal": sig}
			}
			u.Meta = meta
		default:
			u.Content = []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(consoleBlock(strings.TrimRight(view.Output, "\n") + outcome(view))))}
		}
	case view.Text != "":
		u.Content = []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(view.Text))}
	case view.Output != "":
		u.Content = []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(consoleBlock(view.Output)))}
	default:
		u.Content = raw
	}
	if view != nil && view.Title != "" && u.Title == nil {
		title := t.relativize(view.Title, "")
		u.Title = &title
	}
	return sdk.SessionUpdate{ToolCallUpdate: u}
}

func (t *translator) lookup(name string) (tool.Tool, bool) {
	if t.tools == nil {
		return nil, false
	}
	return t.tools.Get(name)
}

// relativize shortens an absolute path inside the session's cwd in a title
// (the path stays absolute in locations and diffs).
func (t *translator) relativize(title, path string) string {
	if path == "" || t.cwd == "" || !filepath.IsAbs(path) || !filepath.IsAbs(t.cwd) {
		if path == "" {
			// Find an absolute path in the title itself.
			for _, f := range strings.Fields(title) {
				if filepath.IsAbs(f) {
					return t.relativize(title, f)
				}
			}
		}
		return title
	}
	rel, err := filepath.Rel(t.cwd, path)
	if err != nil || rel == "" || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return title
	}
	return strings.ReplaceAll(title, path, rel)
}

func (t *translator) resolveCwd(cwd string) string {
	switch {
	case cwd == "":
		return t.cwd
	case filepath.IsAbs(cwd):
		return cwd
	}
	return filepath.Join(t.cwd, cwd)
}

// outcome states a failed command's end below its output in a console
// block, where the editor shows nothing else about it: the view keeps the
// command's output apart from its exit code and signal (which a terminal
// card, the Zed terminal and the web view each show their own way).
func outcome(view *tool.View) string {
	sig, signalled := strings.CutPrefix(view.Text, "killed by signal: ")
	switch {
	case signalled:
		return "\n[killed by signal: " + sig + "]"
	case view.ExitCode != nil && *view.ExitCode != 0:
		return "\n[exit code: " + strconv.Itoa(*view.ExitCode) + "]"
	}
	return ""
}

func consoleBlock(out string) string {
	return "```console\n" + strings.TrimRight(out, "\n") + "\n```"
}

func diffContent(d tool.FileDiff) sdk.ToolCallContent {
	return sdk.ToolCallContent{Diff: &sdk.ToolCallContentDiff{Type: "diff", Path: d.Path, OldText: d.OldText, NewText: d.NewText}}
}

func textContents(bs []llm.Block) []sdk.ToolCallContent {
	var out []sdk.ToolCallContent
	for _, b := range bs {
		switch b.Type {
		case llm.BlockText:
			out = append(out, sdk.ToolContent(sdk.TextBlock(b.Text)))
		case llm.BlockImage:
			if cb, ok := imageContent(b); ok {
				out = append(out, sdk.ToolContent(cb))
			}
		}
	}
	return out
}

// imageContent turns a data-URL image block into an ACP image block.
func imageContent(b llm.Block) (sdk.ContentBlock, bool) {
	rest, ok := strings.CutPrefix(b.URL, "data:")
	if !ok {
		return sdk.ContentBlock{}, false
	}
	meta, data, ok := strings.Cut(rest, ",")
	if !ok || !strings.HasSuffix(meta, ";base64") {
		return sdk.ContentBlock{}, false
	}
	mime := strings.TrimSuffix(meta, ";base64")
	if mime == "" {
		mime = b.MimeType
	}
	return sdk.ImageBlock(data, mime), true
}

func rawInput(cs *callState) any {
	if cs.args != nil {
		return cs.args
	}
	if cs.raw == "" {
		return nil
	}
	return cs.raw
}

// toolKind maps a tool kind (or, without one, the tool's name) to ACP's.
func toolKind(k tool.Kind, name string) sdk.ToolKind {
	switch k {
	case tool.KindRead, tool.KindEdit, tool.KindDelete, tool.KindMove, tool.KindSearch,
		tool.KindExecute, tool.KindFetch, tool.KindThink, tool.KindOther:
		return sdk.ToolKind(k)
	}
	switch {
	case name == "bash" || name == "bash_output" || name == "bash_kill":
		return sdk.ToolKindExecute
	case strings.HasPrefix(name, "read"):
		return sdk.ToolKindRead
	case name == "write" || strings.HasPrefix(name, "edit"):
		return sdk.ToolKindEdit
	case name == "grep" || name == "glob" || name == "ls" || name == "web_search":
		return sdk.ToolKindSearch
	case name == "web_fetch":
		return sdk.ToolKindFetch
	case name == "exit_plan_mode":
		return sdk.ToolKindSwitchMode
	}
	return sdk.ToolKindOther
}

// Presenters run on arbitrary logs; a panicking one degrades to the
// generic card instead of taking the connection down.

func presentCall(p tool.CallPresenter, args json.RawMessage) (v *tool.View) {
	defer func() {
		if recover() != nil {
			v = nil
		}
	}()
	return p.PresentCall(args)
}

func presentResult(p tool.ResultPresenter, args json.RawMessage, r tool.Result) (v *tool.View) {
	defer func() {
		if recover() != nil {
			v = nil
		}
	}()
	return p.PresentResult(args, r)
}

func safeInfo(t tool.Tool) (i tool.Info) {
	defer func() {
		if recover() != nil {
			i = tool.Info{}
		}
	}()
	return t.Info()
}
