package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/tool"
)

// OpenOptions say which session a main agent works on.
type OpenOptions struct {
	// Resume continues this stored session. With Fork, a new session
	// starts from its completed turns instead (--fork-session) and the
	// stored one stays as it was.
	Resume session.ID
	Fork   bool
	// SessionID pins the id of a new session (--session-id); empty picks
	// a fresh one. It must not name a stored session.
	SessionID session.ID
	Approver  tool.Approver
}

// ErrSessionExists says a pinned session id is already taken.
var ErrSessionExists = errors.New("app: a session with this id already exists")

// Open creates, resumes or forks a main agent's session.
func (a *App) Open(ctx context.Context, o OpenOptions) (*agent.Handle, error) {
	if o.Resume != "" && !o.Fork {
		if o.SessionID != "" && o.SessionID != o.Resume {
			return nil, errors.New("app: a resumed session keeps its id (with --fork-session, --session-id names the new one)")
		}
		return a.Resume(ctx, o.Resume, o.Approver)
	}
	if o.SessionID != "" {
		if _, _, err := a.Coordinator.Read(ctx, o.SessionID); err == nil {
			return nil, fmt.Errorf("%w: %s", ErrSessionExists, o.SessionID)
		} else if !errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("app: checking session id %s: %w", o.SessionID, err)
		}
	}
	co := agent.CreateOptions{
		AgentID:   agent.ID("main-" + fmt.Sprint(a.opts.Now().UnixNano())),
		SessionID: o.SessionID,
		Header:    session.Header{Cwd: a.opts.Site.Cwd},
		Options:   a.AgentOptions(o.Approver),
	}
	if o.Resume != "" {
		h, events, err := a.Coordinator.Read(ctx, o.Resume)
		if err != nil {
			return nil, fmt.Errorf("app: forking %s: %w", o.Resume, err)
		}
		// A fork is a session of its own, not a subagent's (ParentSession
		// would list it under the original as one); the seed carries the
		// original's turns and session rules.
		if h.Cwd != "" {
			co.Header.Cwd = h.Cwd
		}
		co.Seed = session.CompletedPrefix(events)
	}
	return a.Host.Agents.Create(ctx, co)
}
