package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/dshq/dsh/serve/api"
	"github.com/dshq/dsh/tool"
)

// pending is a question an agent waits on.
type pending struct {
	req     tool.ApprovalRequest
	asked   time.Time
	expires time.Time
	answer  chan tool.Approval // buffered: the first answer wins
}

// approver puts a session's questions up for answering through the API.
// An unanswered question is answered by the timeout policy: denied, and
// with "cancel" the turn is cancelled too.
type approver struct{ e *entry }

func (a approver) Approve(ctx context.Context, req tool.ApprovalRequest) (tool.Approval, error) {
	e := a.e
	now := e.s.o.Now()
	p := &pending{req: req, asked: now, expires: now.Add(e.s.o.ApprovalTimeout), answer: make(chan tool.Approval, 1)}
	e.mu.Lock()
	e.approvals = append(e.approvals, p)
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.approvals = slices.DeleteFunc(e.approvals, func(o *pending) bool { return o == p })
		e.lastUsed = e.s.o.Now()
		e.mu.Unlock()
	}()
	t := time.NewTimer(e.s.o.ApprovalTimeout)
	defer t.Stop()
	select {
	case ap := <-p.answer:
		return ap, nil
	case <-ctx.Done():
		return tool.Approval{Allow: false, By: "none", Reason: "the question was withdrawn: the turn ended before anyone answered"}, nil
	case <-t.C:
		reason := fmt.Sprintf("nobody answered within %s; the server's approval timeout policy (%s) denies the call", e.s.o.ApprovalTimeout, e.s.o.ApprovalPolicy)
		if e.s.o.ApprovalPolicy == "cancel" {
			if ag := e.agent(); ag != nil {
				go ag.Cancel("an approval timed out (policy cancel)")
			}
		}
		return tool.Approval{Allow: false, By: "timeout", Reason: reason}, nil
	}
}

func (p *pending) view(e *entry) api.Approval {
	args := p.req.Call.Args
	if len(args) == 0 || !json.Valid(args) {
		b, _ := json.Marshal(p.req.Call.Raw)
		args = b
	}
	return api.Approval{Session: e.id, ID: string(p.req.Call.ID), Tool: p.req.Call.Name, Arguments: args, Reason: p.req.Reason,
		Suggestions: p.req.Suggestions, Asked: p.asked.UnixMilli(), Expires: p.expires.UnixMilli()}
}

func (e *entry) pendingViews() []api.Approval {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]api.Approval, 0, len(e.approvals))
	for _, p := range e.approvals {
		out = append(out, p.view(e))
	}
	return out
}

func (s *Server) sessionApprovals(w http.ResponseWriter, r *http.Request, c *call) {
	e, err := s.find(r.Context(), c.tok, r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.ApprovalList{Approvals: e.pendingViews()})
}

func (s *Server) allApprovals(w http.ResponseWriter, _ *http.Request, c *call) {
	s.mu.Lock()
	var entries []*entry
	for _, e := range s.sessions {
		if e.dir != "" && s.allowed(c.tok, e.dir) {
			entries = append(entries, e)
		}
	}
	s.mu.Unlock()
	out := []api.Approval{}
	for _, e := range entries {
		out = append(out, e.pendingViews()...)
	}
	slices.SortFunc(out, func(a, b api.Approval) int { return int(a.Asked - b.Asked) })
	writeJSON(w, http.StatusOK, api.ApprovalList{Approvals: out})
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request, c *call) {
	var ans api.Answer
	if err := decode(r, &ans); err != nil {
		s.fail(w, err)
		return
	}
	e, err := s.find(r.Context(), c.tok, r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	callID := r.PathValue("call")
	e.mu.Lock()
	var p *pending
	for _, o := range e.approvals {
		if string(o.req.Call.ID) == callID {
			p = o
		}
	}
	e.mu.Unlock()
	if p == nil {
		s.fail(w, notFound("no pending question %q in session %s (it may have been answered or timed out)", callID, e.id))
		return
	}
	by := "api:" + c.tok.Name
	var ap tool.Approval
	switch ans.Decision {
	case api.DecisionAllow:
		ap = tool.Approval{Allow: true, By: by}
	case api.DecisionAllowSession:
		rules := ans.Rules
		if len(rules) == 0 {
			rules = p.req.Suggestions
		}
		if len(rules) == 0 {
			s.fail(w, badRequest("no rule can allow calls like this one for the session (no suggestions): answer allow, or give rules"))
			return
		}
		ap = tool.Approval{Allow: true, Rules: rules, By: by}
	case api.DecisionDeny:
		reason := ans.Reason
		if reason == "" {
			reason = "denied by " + c.tok.Name
		}
		ap = tool.Approval{Allow: false, Rules: ans.Rules, Reason: reason, By: by}
	default:
		s.fail(w, badRequest("decision %q: want allow, allow_session or deny", ans.Decision))
		return
	}
	select {
	case p.answer <- ap:
	default:
		s.fail(w, errorf(http.StatusConflict, api.CodeConflict, "question %q was answered already", callID))
		return
	}
	writeJSON(w, http.StatusOK, p.view(e))
}
