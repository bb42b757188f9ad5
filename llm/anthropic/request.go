package anthropic

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/dshq/dsh/llm"
)

type thinkingConfig struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens"`
}

type toolChoice struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
}

type cacheControl struct {
	Type string `json:"type"`
}

type wireTool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl *cacheControl   `json:"cache_control,omitempty"`
}

type wireBlock struct {
	Type         string          `json:"type"`
	Text         *string         `json:"text,omitempty"`
	Thinking     *string         `json:"thinking,omitempty"`
	Signature    string          `json:"signature,omitempty"`
	Data         string          `json:"data,omitempty"`
	ID           string          `json:"id,omitempty"`
	Name         string          `json:"name,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	Content      []wireBlock     `json:"content,omitempty"`
	IsError      bool            `json:"is_error,omitempty"`
	Source       *imageSource    `json:"source,omitempty"`
	CacheControl *cacheControl   `json:"cache_control,omitempty"`
}

type imageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

// noOutput stands in for a tool result whose text is all blank (the
// OpenAI adapter sends the same).
const noOutput = "(no output)"

// blank reports whether s is empty or only whitespace. The Messages API
// rejects such text blocks ("text content blocks must contain non-whitespace
// text"), and one stored in the history (an assistant answer of "\n\n")
// would fail every later request, so they are dropped.
func blank(s string) bool { return strings.TrimSpace(s) == "" }

func textBlock(s string, cache string) wireBlock {
	return wireBlock{Type: "text", Text: &s, CacheControl: cacheOf(cache)}
}

func cacheOf(hint string) *cacheControl {
	if hint == llm.CacheEphemeral {
		return &cacheControl{Type: "ephemeral"}
	}
	return nil
}

// maxBreakpoints is Anthropic's limit on cache_control markers.
const maxBreakpoints = 4

// head and tail are the request's fields before and after "messages", in
// wire order. The messages between them are spliced from per-block
// encodings the wire cache keeps, so a request costs its new messages, not
// its whole history (see docs/rfc: the wire cache).
type head struct {
	Model     string      `json:"model"`
	MaxTokens int         `json:"max_tokens"`
	System    []wireBlock `json:"system,omitempty"`
}

type tail struct {
	Tools         []wireTool      `json:"tools,omitempty"`
	ToolChoice    *toolChoice     `json:"tool_choice,omitempty"`
	Temperature   *float64        `json:"temperature,omitempty"`
	StopSequences []string        `json:"stop_sequences,omitempty"`
	Thinking      *thinkingConfig `json:"thinking,omitempty"`
	Stream        bool            `json:"stream"`
}

// encoded is one history message in wire form: the blocks of a user or
// assistant message, or the system blocks a system message contributes.
type encoded struct {
	role   string // "user", "assistant", "system", or "" (a role the API has no use for)
	blocks []encBlock
	system []wireBlock
	err    error
}

// encBlock is one content block as json.Marshal writes it. Where the block
// pair merges with its neighbours and which cache markers survive depend
// on the whole request, so those are decided per request; the bytes are
// not.
type encBlock struct {
	json     []byte
	wire     *wireBlock // kept only when markers > 0, to re-encode without some
	markers  int        // cache_control markers in it: its own and its content's
	result   bool       // a tool_result (the API wants those first in a user message)
	thinking bool       // never carries the automatic breakpoint
}

func encodeBlocks(wbs []wireBlock) ([]encBlock, error) {
	out := make([]encBlock, len(wbs))
	for i := range wbs {
		b, err := json.Marshal(wbs[i])
		if err != nil {
			return nil, err
		}
		e := encBlock{json: b, result: wbs[i].Type == "tool_result",
			thinking: wbs[i].Type == "thinking" || wbs[i].Type == "redacted_thinking"}
		if wbs[i].CacheControl != nil {
			e.markers++
		}
		for _, c := range wbs[i].Content {
			if c.CacheControl != nil {
				e.markers++
			}
		}
		if e.markers > 0 {
			wb := wbs[i]
			e.wire = &wb
		}
		out[i] = e
	}
	return out, nil
}

// encode is the wire cache's encoder: a message's wire form depends on the
// message alone.
func encode(m llm.Message, _ uint8) encoded {
	var e encoded
	switch m.Role {
	case llm.RoleSystem:
		e.role = "system"
		for _, b := range m.Content {
			if b.Type == llm.BlockText && !blank(b.Text) {
				e.system = append(e.system, textBlock(b.Text, b.Cache))
			}
		}
		return e
	case llm.RoleUser:
		e.role = "user"
		e.blocks, e.err = encodeBlocks(userBlocks(m.Content))
	case llm.RoleAssistant:
		e.role = "assistant"
		e.blocks, e.err = encodeBlocks(assistantBlocks(m.Content))
	}
	return e
}

// fields returns everything of the request but its messages: the model,
// output limit and system prompt before them, the tools and options after.
func (a *Adapter) fields(req *llm.Request) (head, tail, error) {
	model := a.wireModel(req.Model)
	h := head{Model: model, MaxTokens: a.maxTokens(model, req.MaxTokens)}
	t := tail{Stream: true, StopSequences: req.Stop, Temperature: req.Temperature}
	if a.cfg.ThinkingBudget > 0 {
		t.Thinking = &thinkingConfig{Type: "enabled", BudgetTokens: a.cfg.ThinkingBudget}
		t.Temperature = nil
		if h.MaxTokens <= a.cfg.ThinkingBudget {
			h.MaxTokens = a.cfg.ThinkingBudget + DefaultMaxTokens
		}
	}
	if !blank(req.System) {
		h.System = append(h.System, textBlock(req.System, ""))
	}
	for _, tl := range req.Tools {
		params := bytes.TrimSpace(tl.Parameters)
		if len(params) == 0 || string(params) == "null" {
			params = []byte(`{"type":"object","properties":{}}`)
		}
		if !json.Valid(params) {
			return h, t, a.client.Errorf(llm.CodeBadRequest, "tool %q: parameters are not valid JSON", tl.Name)
		}
		t.Tools = append(t.Tools, wireTool{Name: tl.Name, Description: tl.Description, InputSchema: params})
	}
	if len(t.Tools) > 0 {
		switch req.ToolChoice {
		case "":
		case "auto", "none":
			t.ToolChoice = &toolChoice{Type: req.ToolChoice}
		case "required":
			t.ToolChoice = &toolChoice{Type: "any"}
		default:
			t.ToolChoice = &toolChoice{Type: "tool", Name: req.ToolChoice}
		}
	}
	return h, t, nil
}

// prefillBlocks is the assistant turn a request's prefill becomes.
func prefillBlocks(prefill []llm.Block) []wireBlock {
	var pre []wireBlock
	for i, b := range prefill {
		if b.Type != llm.BlockText {
			continue
		}
		txt := b.Text
		if i == len(prefill)-1 {
			txt = strings.TrimRight(txt, " \t\r\n") // the API rejects trailing whitespace here
		}
		if !blank(txt) {
			pre = append(pre, textBlock(txt, ""))
		}
	}
	return pre
}

// group is one wire message: consecutive history messages of one role,
// merged (the API requires alternation).
type group struct {
	role   string
	blocks []*encBlock
}

// autoMarker is the cache_control field the automatic breakpoint adds to
// the last message's last block. It is wireBlock's last field, so it goes
// just before the block's closing brace.
const autoMarker = `,"cache_control":{"type":"ephemeral"}`

// RequestBody returns the JSON body the adapter sends for req: exactly
// what marshalling the whole request at once would write, built from the
// session's cached message encodings plus the new messages.
func (a *Adapter) RequestBody(req *llm.Request) ([]byte, error) {
	h, t, err := a.fields(req)
	if err != nil {
		return nil, err
	}
	encs := a.wire.Encode(req.SessionID, req.Messages, nil, encode)
	// One slice backs every group's blocks: a group only ever grows while
	// it is the last one.
	total := 0
	for i := range encs {
		total += len(encs[i].blocks)
	}
	flat := make([]*encBlock, 0, total+len(req.Prefill))
	var groups []group
	size := 0
	add := func(role string, bs []encBlock) {
		if len(bs) == 0 {
			return
		}
		if n := len(groups); n == 0 || groups[n-1].role != role {
			groups = append(groups, group{role: role, blocks: flat[len(flat):len(flat)]})
		}
		g := &groups[len(groups)-1]
		for i := range bs {
			g.blocks = append(g.blocks, &bs[i])
			size += len(bs[i].json) + 1
		}
		flat = flat[:len(flat)+len(bs)]
	}
	for i := range encs {
		e := &encs[i]
		if e.err != nil {
			return nil, e.err
		}
		switch e.role {
		case "system":
			h.System = append(h.System, e.system...)
		case "user", "assistant":
			add(e.role, e.blocks)
		}
	}
	if len(req.Prefill) > 0 {
		bs, err := encodeBlocks(prefillBlocks(req.Prefill))
		if err != nil {
			return nil, err
		}
		add("assistant", bs)
	}
	for _, g := range groups {
		if g.role == "user" {
			// Tool results first, each side in its order.
			slices.SortStableFunc(g.blocks, func(x, y *encBlock) int {
				switch {
				case x.result == y.result:
					return 0
				case x.result:
					return -1
				}
				return 1
			})
		}
	}

	// Cache breakpoints: at most four markers, counted in wire order
	// (system, then messages, each block before its content); without any
	// explicit hint, the end of the tools, of the system prompt and of the
	// last message are marked, so an agent loop re-reads its growing
	// prefix from the cache.
	count := 0
	for i := range h.System {
		if h.System[i].CacheControl != nil {
			if count++; count > maxBreakpoints {
				h.System[i].CacheControl = nil
			}
		}
	}
	// stripped holds re-encodings of blocks that lost a marker to the limit.
	var stripped map[*encBlock][]byte
	for _, g := range groups {
		for _, b := range g.blocks {
			if b.markers == 0 {
				continue
			}
			if count+b.markers <= maxBreakpoints {
				count += b.markers
				continue
			}
			wb := *b.wire
			wb.Content = slices.Clone(wb.Content)
			if wb.CacheControl != nil {
				if count++; count > maxBreakpoints {
					wb.CacheControl = nil
				}
			}
			for k := range wb.Content {
				if wb.Content[k].CacheControl != nil {
					if count++; count > maxBreakpoints {
						wb.Content[k].CacheControl = nil
					}
				}
			}
			js, err := json.Marshal(wb)
			if err != nil {
				return nil, err
			}
			if stripped == nil {
				stripped = map[*encBlock][]byte{}
			}
			stripped[b] = js
		}
	}
	var marked *encBlock // the block that gets the automatic breakpoint
	if count == 0 && !a.cfg.NoAutoCache {
		eph := &cacheControl{Type: "ephemeral"}
		if n := len(t.Tools); n > 0 {
			t.Tools[n-1].CacheControl = eph
		}
		if n := len(h.System); n > 0 {
			h.System[n-1].CacheControl = eph
		}
		if n := len(groups); n > 0 {
			bs := groups[n-1].blocks
			for j := len(bs) - 1; j >= 0; j-- {
				if !bs[j].thinking {
					marked = bs[j]
					break
				}
			}
		}
	}

	hj, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	tj, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(hj)+len(tj)+size+len(groups)*len(`,{"role":"assistant","content":[]}`)+len(autoMarker))
	out = append(out, hj[:len(hj)-1]...)
	out = append(out, `,"messages":[`...)
	for i, g := range groups {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"role":"`...)
		out = append(out, g.role...)
		out = append(out, `","content":[`...)
		for j, b := range g.blocks {
			if j > 0 {
				out = append(out, ',')
			}
			js := b.json
			if s, ok := stripped[b]; ok {
				js = s
			}
			if b == marked {
				out = append(out, js[:len(js)-1]...)
				out = append(out, autoMarker...)
				out = append(out, '}')
				continue
			}
			out = append(out, js...)
		}
		out = append(out, ']', '}')
	}
	out = append(out, ']', ',')
	return append(out, tj[1:]...), nil
}

func (a *Adapter) maxTokens(model string, requested int) int {
	if requested > 0 {
		return requested
	}
	limit := a.cfg.MaxTokens
	if limit <= 0 {
		limit = 32_000
	}
	for _, m := range a.cfg.Models {
		if m.ID == model && m.MaxOutput > 0 {
			return min(m.MaxOutput, limit)
		}
	}
	return min(DefaultMaxTokens, limit)
}

func userBlocks(content []llm.Block) []wireBlock {
	var out []wireBlock
	for _, b := range content {
		switch b.Type {
		case llm.BlockText:
			if !blank(b.Text) {
				out = append(out, textBlock(b.Text, b.Cache))
			}
		case llm.BlockImage:
			out = append(out, imageBlock(b))
		case llm.BlockToolResult:
			wb := wireBlock{Type: "tool_result", ToolUseID: string(b.ToolCallID), IsError: b.IsError, CacheControl: cacheOf(b.Cache)}
			for _, c := range b.Content {
				switch c.Type {
				case llm.BlockText:
					if !blank(c.Text) {
						wb.Content = append(wb.Content, textBlock(c.Text, ""))
					}
				case llm.BlockImage:
					wb.Content = append(wb.Content, imageBlock(c))
				}
			}
			if len(wb.Content) == 0 && len(b.Content) > 0 {
				// Only blank text: say so rather than send what the
				// API rejects.
				wb.Content = append(wb.Content, textBlock(noOutput, ""))
			}
			out = append(out, wb)
		}
	}
	return out
}

func imageBlock(b llm.Block) wireBlock {
	src := &imageSource{Type: "url", URL: b.URL}
	if rest, ok := strings.CutPrefix(b.URL, "data:"); ok {
		if meta, data, ok := strings.Cut(rest, ","); ok {
			mt, enc, _ := strings.Cut(meta, ";")
			if mt == "" {
				mt = b.MimeType
			}
			if enc == "base64" {
				src = &imageSource{Type: "base64", MediaType: mt, Data: data}
			}
		}
	}
	return wireBlock{Type: "image", Source: src, CacheControl: cacheOf(b.Cache)}
}

func assistantBlocks(content []llm.Block) []wireBlock {
	var out []wireBlock
	for _, b := range content {
		switch b.Type {
		case llm.BlockText:
			if !blank(b.Text) {
				out = append(out, textBlock(b.Text, b.Cache))
			}
		case llm.BlockReasoning:
			// Only signed thinking can go back; unsigned reasoning (from
			// another provider) is dropped.
			switch {
			case b.Redacted != "":
				out = append(out, wireBlock{Type: "redacted_thinking", Data: b.Redacted})
			case b.Signature != "":
				t := b.Text
				out = append(out, wireBlock{Type: "thinking", Thinking: &t, Signature: b.Signature})
			}
		case llm.BlockToolCall:
			out = append(out, wireBlock{Type: "tool_use", ID: string(b.ID), Name: b.Name, Input: toolInput(b.Arguments)})
		}
	}
	return out
}

// toolInput turns raw arguments into the object Anthropic requires; text
// that is not a JSON object becomes {}.
func toolInput(args string) json.RawMessage {
	raw := bytes.TrimSpace([]byte(args))
	if len(raw) > 0 && raw[0] == '{' && json.Valid(raw) {
		return raw
	}
	return json.RawMessage(`{}`)
}
