package serve

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/dshq/dsh/serve/api"
)

func (s *Server) runs(w http.ResponseWriter) (Runs, bool) {
	if s.o.Runs == nil {
		writeError(w, http.StatusServiceUnavailable, api.CodeUnavailable, "background runs need the job queue: run dsh serve on a PostgreSQL session store (sessionStore \"postgres\")")
		return nil, false
	}
	return s.o.Runs, true
}

func (s *Server) runFail(w http.ResponseWriter, err error) {
	if errors.Is(err, ErrRunNotFound) {
		err = notFound("%v", err)
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
