package subagent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

// InProcess is the spawn and fork providers: a child agent in this
// process, on the same tool registry, hooks and permission policy, whose
// session names the parent's as its lineage.
type InProcess struct {
	name    string
	fork    bool
	agents  *agent.Registry
	service *Service
}

// Spawn returns a provider whose children start with an empty history.
func Spawn(s *Service, agents *agent.Registry) *InProcess {
	return &InProcess{name: "spawn", agents: agents, service: s}
}

// Fork returns a provider whose children inherit the parent's completed
// turns (the turn that asks for the fork is not included).
func Fork(s *Service, agents *agent.Registry) *InProcess {
	return &InProcess{name: "fork", fork: true, agents: agents, service: s}
}

// Name implements Provider.
func (p *InProcess) Name() string { return p.name }

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Start implements Provider.
func (p *InProcess) Start(ctx context.Context, req Request, depth int) (Run, error) {
	parent := req.Parent
	opts := parent.Options()
	if req.Options.Model != "" {
		opts.Model = req.Options.Model
	}
	opts.SystemPrompt = req.Options.SystemPrompt
	if req.Options.Tools != nil {
		parentFilter, childFilter := opts.Tools, req.Options.Tools
		opts.Tools = func(i tool.Info) bool {
			return (parentFilter == nil || parentFilter(i)) && childFilter(i)
		}
	}
	h := session.Header{Cwd: parent.Session().Cwd(), ParentSession: parent.Session().ID()}
	var seed []session.Event
	if p.fork {
		log, err := parent.Session().Log(ctx)
		if err != nil {
			return nil, fmt.Errorf("subagent: forking %s: %w", parent.ID(), err)
		}
		seed = session.CompletedPrefix(log)
	}
	id := agent.ID(string(parent.ID()) + "/" + p.name + "-" + newID())
	hd, err := p.agents.Create(ctx, agent.CreateOptions{AgentID: id, SessionID: session.ID(newID() + "-" + newID()), Header: h, Seed: seed, Options: opts})
	if err != nil {
		return nil, err
	}
	forget := p.service.enter(id, depth, req.slot)
	r := &inRun{hd: hd, seedLen: len(seed), forget: forget}
	if err := hd.Agent.Send(ctx, req.Prompt, llm.Source{Kind: llm.SourceAgent, AgentID: string(parent.ID())}); err != nil {
		_ = r.Dispose(context.WithoutCancel(ctx))
		return nil, err
	}
	return r, nil
}

type inRun struct {
	hd        *agent.Handle
	seedLen   int
	forget    func()
	mu        sync.Mutex
	cancelled bool
	once      sync.Once
}

func (r *inRun) ID() string               { return string(r.hd.Agent.ID()) }
func (r *inRun) ChildSession() session.ID { return r.hd.Agent.Session().ID() }

func (r *inRun) Cancel(reason string) {
	r.mu.Lock()
	r.cancelled = true
	r.mu.Unlock()
	r.hd.Agent.Cancel(reason)
}

// Wait waits for the child's turn and reads the result from its own events.
func (r *inRun) Wait(ctx context.Context) (Result, error) {
	if err := r.hd.Agent.WhenIdle(ctx); err != nil {
		return Result{}, err
	}
	res := Result{ChildSession: r.ChildSession(), StopReason: Failed}
	// A long child turn's assistant messages are released from memory:
	// they are folded with their payloads read back in batches, not one
	// read each.
	err := r.hd.Agent.Session().Each(ctx, int64(r.seedLen), func(e session.Event) bool {
		return e.Seq >= int64(r.seedLen) && (e.Type == session.TypeAssistantMessage || e.Type == session.TypeTurnEnd)
	}, func(e session.Event) error {
		switch e.Type {
		case session.TypeAssistantMessage:
			if am, err := session.Decode[session.AssistantMessage](e); err == nil && len(am.Content) > 0 {
				res.Output = am.Content
			}
		case session.TypeTurnEnd:
			te, _ := session.Decode[session.TurnEnd](e)
			switch te.Reason.Kind {
			case session.EndCompleted:
				res.StopReason = Completed
			case session.EndMaxTokens:
				res.StopReason = MaxTokens
			case session.EndAborted:
				res.StopReason = Aborted
			default:
				res.StopReason = Failed
			}
		}
		return nil
	})
	if err != nil {
		return Result{}, fmt.Errorf("subagent: reading the child's result: %w", err)
	}
	r.mu.Lock()
	if r.cancelled && res.StopReason != Completed {
		res.StopReason = Aborted
	}
	r.mu.Unlock()
	var text []llm.Block
	for _, b := range res.Output {
		if b.Type == llm.BlockText {
			text = append(text, b)
		}
	}
	res.Output = text
	return res, nil
}

func (r *inRun) Dispose(ctx context.Context) error {
	var err error
	r.once.Do(func() {
		err = r.hd.Dispose(ctx)
		r.forget()
	})
	return err
}
