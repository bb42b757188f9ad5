package acp

import (
	"context"
	"strings"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/subagent"
	"github.com/dshq/dsh/tool"
)

// ---- subagent activity under the parent's tool call ----
//
// A task or fork call runs a child agent on a session of its own (its
// header names the parent session). The editor knows only the parent's ACP
// session, so the child's progress is shown as tool_call_update content
// of the parent's call: a line per child tool call ("↳ bash: …") and the
// child's latest streamed text. Grandchildren report to the same call.

// childBuffer bounds the events kept for a child whose parent call is not
// known yet (its subagent/start is recorded just after it starts).
const childBuffer = 4096

// childText bounds the child's streamed text shown in the card.
const childText = 2000

// childLink follows one child session for the owned session it reports to.
type childLink struct {
	root  *sess
	child session.ID
	call  llm.CallID    // the root session's call ("" until known)
	known chan struct{} // closed once call is set
	buf   []session.Event
	tr    *translator // titles of the child's calls
	lines []string
	idx   map[llm.CallID]int
	text  strings.Builder
	// textDone: the last assistant message ended; the next stream
	// replaces the text shown.
	textDone bool
}

func (s *Server) newLink(root *sess, child session.ID) *childLink {
	return &childLink{root: root, child: child, known: make(chan struct{}), tr: root.newTranslator(false), idx: map[llm.CallID]int{}}
}

// followChildren routes subagent lifecycle events of owned sessions (and
// of their children) and the events of children. It runs for every
// appended event of the workspace.
func (s *Server) followChildren(live *session.Live, ap session.Appended) {
	e := ap.Event
	sid := ap.Session.ID()
	switch e.Type {
	case subagent.TypeStart:
		st, err := session.Decode[subagent.StartEvent](e)
		if err != nil || st.ChildSession == "" || st.CallID == "" {
			return
		}
		s.kidsMu.Lock()
		defer s.kidsMu.Unlock()
		root, call := s.session(string(sid)), st.CallID
		if root == nil {
			pl := s.kids[sid]
			if pl == nil || pl.call == "" {
				return
			}
			root, call = pl.root, pl.call
		}
		l := s.kids[st.ChildSession]
		if l == nil || l.root != root {
			l = s.newLink(root, st.ChildSession)
			s.kids[st.ChildSession] = l
		}
		if l.call != "" {
			return
		}
		l.call = call
		close(l.known)
		buf := l.buf
		l.buf = nil
		changed := false
		for _, be := range buf {
			changed = l.apply(be) || changed
		}
		if changed {
			l.send()
		}
		return
	case subagent.TypeEnd:
		if end, err := session.Decode[subagent.EndEvent](e); err == nil && end.ChildSession != "" {
			s.kidsMu.Lock()
			delete(s.kids, end.ChildSession)
			s.kidsMu.Unlock()
		}
		return
	}
	if s.session(string(sid)) != nil {
		return
	}
	s.kidsMu.Lock()
	defer s.kidsMu.Unlock()
	l := s.kids[sid]
	if l == nil {
		root := s.owner(live, ap.Session)
		if root == nil {
			return
		}
		l = s.newLink(root, sid)
		s.kids[sid] = l
	}
	if l.call == "" {
		if len(l.buf) < childBuffer {
			l.buf = append(l.buf, e.Clone())
		}
		return
	}
	if l.apply(e) {
		l.send()
	}
}

// owner returns the owned session a subagent's session (at any depth)
// reports to: its nearest ancestor the server owns, or nil.
func (s *Server) owner(live *session.Live, child *session.Session) *sess {
	for _, anc := range live.Lineage(child)[1:] {
		if r := s.session(string(anc.ID())); r != nil {
			return r
		}
	}
	return nil
}

// forgetChildren drops the links reporting to a disposed session.
func (s *Server) forgetChildren(root *sess) {
	s.kidsMu.Lock()
	defer s.kidsMu.Unlock()
	for id, l := range s.kids {
		if l.root == root {
			delete(s.kids, id)
		}
	}
}

// apply folds one child event into the summary; it reports a change.
func (l *childLink) apply(e session.Event) bool {
	switch e.Type {
	case session.TypeToolCall:
		c, err := session.Decode[session.ToolCall](e)
		if err != nil {
			return false
		}
		u := l.tr.toolCall(c)
		line := "↳ " + c.Name
		if u.ToolCall != nil && u.ToolCall.Title != "" && u.ToolCall.Title != c.Name {
			line += ": " + oneLine(u.ToolCall.Title)
		}
		if i, ok := l.idx[c.CallID]; ok {
			l.lines[i] = line
		} else {
			l.idx[c.CallID] = len(l.lines)
			l.lines = append(l.lines, line)
		}
		return true
	case session.TypeToolResult:
		r, err := session.Decode[session.ToolResult](e)
		if err != nil {
			return false
		}
		l.tr.toolResult(r)
		if i, ok := l.idx[r.CallID]; ok && r.IsError {
			l.lines[i] += " (failed)"
			return true
		}
	case session.TypeAssistantChunk:
		c, err := session.Decode[session.AssistantChunk](e)
		if err != nil || c.Chunk.Type != llm.ChunkTextDelta || c.Chunk.Text == "" {
			return false
		}
		if l.textDone {
			l.text.Reset()
			l.textDone = false
		}
		l.text.WriteString(c.Chunk.Text)
		return true
	case session.TypeAssistantMessage:
		m, err := session.Decode[session.AssistantMessage](e)
		if err != nil {
			return false
		}
		wasDone := l.textDone
		l.textDone = true
		if t := llm.TextOf(textBlocks(m.Content)); t != "" && (wasDone || l.text.Len() == 0) {
			// A message recorded without its stream.
			l.text.Reset()
			l.text.WriteString(t)
			return true
		}
	case session.TypeTurnEnd:
		l.tr.translate(e)
	}
	return false
}

func textBlocks(bs []llm.Block) []llm.Block {
	var out []llm.Block
	for _, b := range bs {
		if b.Type == llm.BlockText {
			out = append(out, b)
		}
	}
	return out
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 120 {
		s = string(r[:119]) + "…"
	}
	return s
}

// summary renders the child's activity.
func (l *childLink) summary() string {
	var b strings.Builder
	b.WriteString(strings.Join(l.lines, "\n"))
	if t := strings.TrimSpace(l.text.String()); t != "" {
		if r := []rune(t); len(r) > childText {
			t = "…" + string(r[len(r)-childText:])
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(t)
	}
	return b.String()
}

// send shows the summary in the root's call card, while the call runs.
// The caller holds the server's kidsMu.
func (l *childLink) send() {
	content := l.summary()
	if content == "" {
		return
	}
	l.notifyRoot(sdk.SessionUpdate{ToolCallUpdate: &sdk.SessionToolCallUpdate{
		SessionUpdate: "tool_call_update", ToolCallId: sdk.ToolCallId(l.call),
		Content: []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(content))},
		Meta:    map[string]any{"dsh": map[string]any{"subagent": map[string]any{"childSession": string(l.child)}}},
	}})
}

// notifyRoot sends an update for the root's call unless that call has
// already finished (its result is the card's final content).
func (l *childLink) notifyRoot(u sdk.SessionUpdate) {
	r := l.root
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.ready || r.disposed || r.srv.isClosed() {
		return
	}
	if cs := r.tr.calls[l.call]; cs == nil || cs.done {
		return
	}
	r.notify(u)
}

// childLinkWait bounds how long a child's approval waits for its parent's
// call to be known.
const childLinkWait = 5 * time.Second

// childApproval is the permission request of a child's call, shown on the
// root's call card; ok is false when the child's parent call is unknown.
func (s *Server) childApproval(ctx context.Context, root *sess, child session.ID, req tool.ApprovalRequest) (sdk.ToolCallUpdate, bool) {
	s.kidsMu.Lock()
	l := s.kids[child]
	s.kidsMu.Unlock()
	if l == nil || l.root != root {
		return sdk.ToolCallUpdate{}, false
	}
	t := time.NewTimer(childLinkWait)
	defer t.Stop()
	select {
	case <-l.known:
	case <-ctx.Done():
		return sdk.ToolCallUpdate{}, false
	case <-t.C:
		return sdk.ToolCallUpdate{}, false
	}
	s.kidsMu.Lock()
	defer s.kidsMu.Unlock()
	line := "↳ " + req.Call.Name
	tc, ok := l.tr.pendingCall(req.Call.ID)
	if ok && tc.Title != nil && *tc.Title != "" && *tc.Title != req.Call.Name {
		line += ": " + oneLine(*tc.Title)
	}
	content := []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock("A subagent asks to run " + strings.TrimPrefix(line, "↳ ")))}
	out := sdk.ToolCallUpdate{ToolCallId: sdk.ToolCallId(l.call)}
	if ok {
		content = append(content, tc.Content...)
		out.Locations = tc.Locations
		out.RawInput = tc.RawInput
	}
	out.Content = content
	out.Meta = map[string]any{"dsh": map[string]any{"subagent": map[string]any{
		"childSession": string(child), "callId": string(req.Call.ID), "tool": req.Call.Name,
	}}}
	return out, true
}

// childAnswered shows the child's activity again after its approval.
func (s *Server) childAnswered(child session.ID) {
	s.kidsMu.Lock()
	defer s.kidsMu.Unlock()
	if l := s.kids[child]; l != nil && l.call != "" {
		l.send()
	}
}
