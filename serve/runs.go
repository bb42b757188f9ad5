package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/serve/api"
	"github.com/dshq/dsh/serve/tokens"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
)

func (s *Server) runs(w http.ResponseWriter) (Runs, bool) {
	if s.o.Runs == nil {
		writeError(w, http.StatusServiceUnavailable, api.CodeUnavailable, "background runs need the job queue: run dsh serve on a PostgreSQL session store (sessionStore \"postgres\")")
		return nil, false
	}
	return s.o.Runs, true
}

func (s *Server) runFail(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, ErrRunNotFound):
		err = notFound("%v", err)
	case errors.Is(err, ErrRunFinished):
		err = errorf(http.StatusConflict, api.CodeConflict, "%v", err)
	}
	s.fail(w, err)
}

func (s *Server) createRun(w http.ResponseWriter, r *http.Request, c *call) {
	q, ok := s.runs(w)
	if !ok {
		return
	}
	var req api.CreateRun
	if err := decode(r, &req); err != nil {
		s.fail(w, err)
		return
	}
	if strings.TrimSpace(req.Prompt) == "" {
		s.fail(w, badRequest("prompt is empty"))
		return
	}
	dir, err := s.resolveWorkspace(c.tok, req.Workspace)
	if err != nil {
		s.fail(w, err)
		return
	}
	if req.MaxAttempts < 0 || req.MaxAttempts > 25 {
		s.fail(w, badRequest("maxAttempts must be between 1 and 25"))
		return
	}
	run, err := q.Create(r.Context(), c.tok, req, dir)
	if err != nil {
		s.runFail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, run)
}

func (s *Server) runID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		s.fail(w, notFound("no run %q", r.PathValue("id")))
		return 0, false
	}
	return id, true
}

// visible reports whether a token may see a run (its workspace).
func (s *Server) visible(c *call, run api.Run) bool { return s.allowed(c.tok, run.Workspace) }

func (s *Server) getRun(w http.ResponseWriter, r *http.Request, c *call) {
	q, ok := s.runs(w)
	if !ok {
		return
	}
	id, ok := s.runID(w, r)
	if !ok {
		return
	}
	run, err := q.Get(r.Context(), id)
	if err == nil && !s.visible(c, run) {
		err = ErrRunNotFound
	}
	if err != nil {
		s.runFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, run)
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request, c *call) {
	q, ok := s.runs(w)
	if !ok {
		return
	}
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	runs, err := q.List(r.Context(), limit)
	if err != nil {
		s.runFail(w, err)
		return
	}
	out := []api.Run{}
	for _, run := range runs {
		if s.visible(c, run) {
			out = append(out, run)
		}
	}
	writeJSON(w, http.StatusOK, api.RunList{Runs: out})
}

func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request, c *call) {
	q, ok := s.runs(w)
	if !ok {
		return
	}
	id, ok := s.runID(w, r)
	if !ok {
		return
	}
	run, err := q.Get(r.Context(), id)
	if err == nil && !s.visible(c, run) {
		err = ErrRunNotFound
	}
	if err == nil {
		run, err = q.Cancel(r.Context(), id)
	}
	if err != nil {
		s.runFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, run)
}

// RunSpec is one attempt of a background run as a worker executes it
// (package serve/jobs hands it to [Server.ExecuteRun]).
type RunSpec struct {
	Run     int64
	Attempt int
	// Session is the run's own session, chosen when the run was queued,
	// so every attempt, on whichever worker, continues the same log.
	Session        session.ID
	Workspace      string // absolute, links resolved when it was queued
	Prompt         string
	Model          string
	PermissionMode string
}

// ErrRunBusy is returned by [Server.ExecuteRun] when the run's session is
// held by another writer (a worker still running an earlier attempt, or
// one that died and whose lease has not yet expired): the attempt did
// nothing and may be tried again later without counting as a failure.
var ErrRunBusy = errors.New("serve: the run's session is held by another worker")

// ExecuteRun runs spec's prompt headless in its session, in this server, so
// its events stream like any session's. It returns the final answer of
// the turn once it completes.
//
// It is idempotent: a session that already holds a completed turn (an
// earlier attempt finished, but its worker died before the queue heard of
// it) is not prompted again; its answer is returned. A turn an earlier
// attempt left open (its worker killed mid-turn) is closed as interrupted
// when the session is loaded; the prompt it recorded is then answered by a
// retried turn (agent.Retrier), not sent a second time (see submitRun) —
// unless the model had already given its final answer when the worker
// died (in a Stop hook, or between the answer and turn/end): that answer
// is the run's result, and the model is not asked again. The writer lease makes these checks safe: only the worker holding it
// appends.
//
// When ctx ends (the run was cancelled, or the worker stops) the turn is
// cancelled and ExecuteRun returns once it has ended.
func (s *Server) ExecuteRun(ctx context.Context, spec RunSpec) (string, error) {
	e, a, err := s.runAgent(ctx, spec)
	if err != nil {
		return "", err
	}
	if !e.run.TryLock() {
		return "", fmt.Errorf("%w: run %d: another attempt is working on session %s here", ErrRunBusy, spec.Run, spec.Session)
	}
	defer e.run.Unlock()
	sess := a.Session()
	if a.Status() != agent.Idle {
		// A turn of this session is still running here (an earlier
		// attempt this process was told to abandon): let it end first.
		if err := a.WhenIdle(ctx); err != nil {
			return "", err
		}
	}
	if text, ok := completedAnswer(sess, 0); ok {
		return text, s.saved(ctx, e, a, spec)
	}
	if text, ok := answerBeforeDeath(ctx, sess, runRef(spec.Run)); ok {
		return text, s.saved(ctx, e, a, spec)
	}
	from := int64(sess.Len())
	if err := submitRun(ctx, a, spec); err != nil {
		return "", err
	}
	e.touch()
	end, err := waitTurnEnd(ctx, sess, from)
	if err != nil {
		a.Cancel(fmt.Sprintf("run %d was cancelled or its worker is stopping", spec.Run))
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = a.WhenIdle(wctx)
		return "", err
	}
	e.touch()
	if end.Reason.Kind != session.EndCompleted {
		msg := end.Reason.Kind
		if d := cmp.Or(end.Reason.Message, end.Reason.Reason); d != "" {
			msg += ": " + d
		}
		return "", fmt.Errorf("serve: run %d: the turn ended %s", spec.Run, msg)
	}
	text, _ := completedAnswer(sess, from)
	if err := s.saved(ctx, e, a, spec); err != nil {
		return "", err
	}
	return text, nil
}

// saveTimeout bounds the checkpoint of an answered attempt. It does not end
// with the attempt's context: a turn that has ended is worth saving even
// while the worker stops.
const saveTimeout = time.Minute

// saved is the last step of every answered attempt: the session's events,
// its turn/end among them, are written to the store before the attempt
// reports the answer. The caller completes the River job on success, and
// every other worker (and a client asking any of them) reads the session
// from the store: a turn/end in this process's memory is not theirs yet,
// and a worker killed before its buffer is written would lose a turn its
// run was reported for. The agent loop's own final checkpoint may still be
// writing; this one waits for it (the store serializes a session's
// flushes) and writes what it left. A failure fails the attempt, so River
// retries it, and the retry reports the answer once it is stored.
//
// The entry's load lock keeps the session from being evicted meanwhile;
// one evicted already was flushed by its disposal, which may have failed
// unheard, so the attempt fails and the retry reads the store.
func (s *Server) saved(ctx context.Context, e *entry, a agent.Agent, spec RunSpec) error {
	e.load.Lock()
	defer e.load.Unlock()
	e.mu.Lock()
	var host *app.App
	if e.h != nil && e.h.Agent == a && e.ws != nil {
		host = e.ws.app
	}
	e.mu.Unlock()
	if host == nil {
		return fmt.Errorf("serve: run %d: session %s left memory before its turn was saved", spec.Run, spec.Session)
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	if err := host.Host.Sessions.FlushSession(fctx, a.Session()); err != nil {
		return fmt.Errorf("serve: run %d: its turn is not saved: %w", spec.Run, err)
	}
	if lost := host.LeaseLost(spec.Session); lost != nil {
		return fmt.Errorf("serve: run %d: %w", spec.Run, lost)
	}
	return nil
}

// runRef is the ref a run's prompt carries (llm.Source.Ref), so a later
// attempt finds it in the session whatever a prompt-submit listener made
// of its text.
func runRef(run int64) string { return "run:" + strconv.FormatInt(run, 10) }

// submitRun starts the turn of a run's attempt: its prompt, marked with the
// run's ref; or, when an earlier attempt recorded that prompt and no turn
// answered it (its worker died mid-turn, or its model call failed), a
// retried turn that answers the history without recording the prompt
// again. Sending it again would have the model answer both copies.
func submitRun(ctx context.Context, a agent.Agent, spec RunSpec) error {
	ref := runRef(spec.Run)
	if !recordedPrompt(ctx, a.Session(), ref) {
		if err := a.Send(ctx, []llm.Block{llm.Text(spec.Prompt)}, llm.Source{Kind: llm.SourceUser, Ref: ref}); err != nil {
			return fmt.Errorf("serve: run %d: sending the prompt: %w", spec.Run, err)
		}
		return nil
	}
	r, ok := a.(agent.Retrier)
	if !ok {
		return fmt.Errorf("serve: run %d: its prompt is recorded without an answer, and this agent cannot retry a turn", spec.Run)
	}
	if err := r.Retry(ctx); err != nil {
		return fmt.Errorf("serve: run %d: retrying its turn after attempt %d: %w", spec.Run, spec.Attempt-1, err)
	}
	return nil
}

// recordedPrompt reports whether the session holds the user/message of the
// prompt marked ref (by its ref, not its text: a prompt-submit listener may
// have rewritten the text).
func recordedPrompt(ctx context.Context, sess *session.Session, ref string) bool {
	found := false
	_ = sess.Range(ctx, 0, int64(sess.Len()), func(ev session.Event) error {
		if ev.Type != session.TypeUserMessage {
			return nil
		}
		if p, err := session.Decode[session.Prompt](ev); err == nil && p.Source.Ref == ref {
			found = true
			return errStop
		}
		return nil
	})
	return found
}

// runAgent loads the run's session (creating it on the first attempt).
func (s *Server) runAgent(ctx context.Context, spec RunSpec) (*entry, agent.Agent, error) {
	var inUse *store.InUseError
	e, err := s.find(ctx, tokens.Token{}, string(spec.Session))
	if he := (*httpError)(nil); err != nil && (!errors.As(err, &he) || he.status != http.StatusNotFound) {
		return nil, nil, fmt.Errorf("serve: run %d: %w", spec.Run, err)
	}
	if err == nil {
		a, err := e.live(ctx)
		if err != nil {
			var he *httpError
			if errors.As(err, &inUse) || (errors.As(err, &he) && he.status == http.StatusConflict) {
				return nil, nil, fmt.Errorf("%w: %v", ErrRunBusy, err)
			}
			return nil, nil, fmt.Errorf("serve: run %d: %w", spec.Run, err)
		}
		return e, a, nil
	}
	req := api.CreateSession{Workspace: spec.Workspace, Model: spec.Model, PermissionMode: spec.PermissionMode}
	e, _, err = s.createEntry(ctx, tokens.Token{}, req, &forkSeed{id: spec.Session})
	if err != nil {
		if errors.As(err, &inUse) || errors.Is(err, store.ErrExists) {
			return nil, nil, fmt.Errorf("%w: %v", ErrRunBusy, err)
		}
		return nil, nil, fmt.Errorf("serve: run %d: %w", spec.Run, err)
	}
	return e, e.agent(), nil
}

// waitTurnEnd waits for the first turn/end at or after seq from.
func waitTurnEnd(ctx context.Context, sess *session.Session, from int64) (session.TurnEnd, error) {
	next := from
	for {
		longer := sess.WhenLonger(int(next))
		var end *session.TurnEnd
		err := sess.Range(ctx, next, int64(sess.Len()), func(ev session.Event) error {
			next = ev.Seq + 1
			if ev.Type == session.TypeTurnEnd && end == nil {
				te, err := session.Decode[session.TurnEnd](ev)
				if err != nil {
					return err
				}
				end = &te
			}
			return nil
		})
		if err != nil {
			return session.TurnEnd{}, err
		}
		if end != nil {
			return *end, nil
		}
		select {
		case <-ctx.Done():
			return session.TurnEnd{}, context.Cause(ctx)
		case <-longer:
		}
	}
}

// completedAnswer is the final assistant text of the first turn completed
// at or after seq from.
func completedAnswer(sess *session.Session, from int64) (string, bool) {
	var last string
	done := false
	_ = sess.Range(context.Background(), from, int64(sess.Len()), func(ev session.Event) error {
		switch ev.Type {
		case session.TypeTurnStart:
			last = ""
		case session.TypeAssistantMessage:
			if m, err := session.Decode[session.AssistantMessage](ev); err == nil {
				if t := llm.TextOf(m.Content); t != "" {
					last = t
				}
			}
		case session.TypeTurnEnd:
			if te, err := session.Decode[session.TurnEnd](ev); err == nil && te.Reason.Kind == session.EndCompleted {
				done = true
				return errStop
			}
		}
		return nil
	})
	return last, done
}

// answerBeforeDeath returns the final answer of a run whose turn was closed
// as interrupted after the model had finished: the history, from the run's
// prompt (marked ref) on, ends with a whole assistant message that calls no
// tool. Such a turn has nothing left for the model to answer (a retry is
// refused with agent.ErrNothingToRetry), so failing the run would throw
// away an answer the session holds. A partial message (Interrupted), a
// tool call, or anything after the answer for the model to read (a tool
// result, context, steering) means the run is not answered.
func answerBeforeDeath(ctx context.Context, sess *session.Session, ref string) (string, bool) {
	var answer string
	prompted := false
	_ = sess.Range(ctx, 0, int64(sess.Len()), func(ev session.Event) error {
		switch ev.Type {
		case session.TypeUserMessage:
			if p, err := session.Decode[session.Prompt](ev); err == nil && p.Source.Ref == ref {
				prompted = true
			}
			answer = ""
		case session.TypeAssistantMessage:
			answer = ""
			m, err := session.Decode[session.AssistantMessage](ev)
			if err != nil || m.Interrupted || slices.ContainsFunc(m.Content, func(b llm.Block) bool { return b.Type == llm.BlockToolCall }) {
				return nil
			}
			answer = llm.TextOf(m.Content)
		case session.TypeToolResult, session.TypeContextMessage, session.TypeSteeringMessage:
			answer = ""
		}
		return nil
	})
	return answer, prompted && answer != ""
}

var errStop = errors.New("stop")
