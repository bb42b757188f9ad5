// Package checkpoint is dsh's checkpoint capability: it records the state
// of the workspace at the start of every user turn, before the first
// change of every later step and at the end of each turn, and rewinds a
// session's code, conversation or both to any of those points.
//
// A checkpoint is a scan of the workspace (the session's directory and
// the additional directories) into a content-addressed store under
// $DSH_HOME (package [files]), so it sees whatever changed the files: the
// write and edit tools, a `sed -i` in bash, a background task, a
// subagent. Unchanged files cost a stat and nothing on disk. The session
// log references each checkpoint by an event (checkpoint/taken); a rewind
// is logged too (checkpoint/restore-start before any file is touched,
// checkpoint/restored after, checkpoint/rewind for the conversation), so
// the log stays append-only and says which rewind was applied. The design
// is in docs/rfc (checkpoints and rewind).
package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/checkpoint/files"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/internal/ownership"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/settings"
	"github.com/dshq/dsh/tool"
)

// Config is the "checkpoints" settings key.
type Config struct {
	// Disabled switches checkpoints off (rewind then covers only the
	// conversation).
	Disabled bool `json:"disabled,omitempty"`
	// MaxFileBytes is the size cap: larger files are recorded by size and
	// time only, and a rewind reports them instead of restoring them.
	MaxFileBytes int64 `json:"maxFileBytes,omitempty"`
	// MaxFiles bounds one scan (directories past it are not recorded).
	MaxFiles int `json:"maxFiles,omitempty"`
	// Ignore are more .gitignore-format patterns left out of checkpoints,
	// after the defaults (node_modules/, build outputs) and before each
	// directory's own .gitignore.
	Ignore []string `json:"ignore,omitempty"`
	// NoDefaultIgnores records dependency trees and build outputs too.
	NoDefaultIgnores bool `json:"noDefaultIgnores,omitempty"`
	// Roots are the directories recorded besides the session's own and
	// the permission settings' additional directories (set by Plugin).
	Roots []string `json:"-"`
}

// Key is the "checkpoints" settings key; a higher layer's fields replace
// a lower one's where set.
var Key = settings.Key[Config]{Name: "checkpoints", Merge: func(lower, higher Config) Config {
	if higher.Disabled {
		lower.Disabled = true
	}
	if higher.MaxFileBytes > 0 {
		lower.MaxFileBytes = higher.MaxFileBytes
	}
	if higher.MaxFiles > 0 {
		lower.MaxFiles = higher.MaxFiles
	}
	lower.Ignore = append(append([]string(nil), lower.Ignore...), higher.Ignore...)
	if higher.NoDefaultIgnores {
		lower.NoDefaultIgnores = true
	}
	return lower
}}

// Dir is the store's directory under $DSH_HOME.
const Dir = "checkpoints"

// Event types this capability owns.
const (
	// TypeTaken references a checkpoint (payload [Taken]).
	TypeTaken = "checkpoint/taken"
	// TypeRestoreStart is written, and made durable, before a rewind
	// touches any file (payload [RestoreStart]).
	TypeRestoreStart = "checkpoint/restore-start"
	// TypeRestored says what a rewind did to the files (payload
	// [Restored]). A restore-start without it is a rewind that was
	// interrupted: each file holds either its old or its new content.
	TypeRestored = "checkpoint/restored"
	// TypeRewind is a conversation rewind (payload [Rewound]): a surface
	// event shadowing the history from a turn on.
	TypeRewind = session.TypeRewind
	// TriggerRewind is the trigger kind of the one-shot turn a rewind of
	// an idle session is recorded in.
	TriggerRewind = "rewind"
)

// Where a checkpoint was taken.
const (
	AtTurn = "turn" // before the turn's first step
	AtStep = "step" // before the first change of a later step
	AtEnd  = "end"  // when the turn ended
	// AtRewind marks the states a rewind found and left (its
	// restore-start and restored records), not a checkpoint/taken.
	AtRewind = "rewind"
)

// Taken is the payload of checkpoint/taken.
type Taken struct {
	Turn int        `json:"turn"`
	Step int        `json:"step,omitempty"`
	At   string     `json:"at"`
	ID   files.Hash `json:"id"`
	// Files counts the files recorded with their content, Hashed those
	// read because they changed, Stored the new objects and StoredBytes
	// their size: the disk this checkpoint added.
	Files       int   `json:"files"`
	Hashed      int   `json:"hashed,omitempty"`
	Stored      int   `json:"stored,omitempty"`
	StoredBytes int64 `json:"storedBytes,omitempty"`
	// Ignored and Oversize count files left out (ignore rules, the size
	// cap); Unscanned directories the scan could not read or did not
	// reach (Limited: the file limit).
	Ignored   int   `json:"ignored,omitempty"`
	Oversize  int   `json:"oversize,omitempty"`
	Unscanned int   `json:"unscanned,omitempty"`
	Limited   bool  `json:"limited,omitempty"`
	Micros    int64 `json:"micros,omitempty"`
}

// Checkpoints is the capability: it takes checkpoints as agents work and
// rewinds sessions. It is safe for concurrent use.
type Checkpoints struct {
	cfg     Config
	store   *files.Store
	scanner *files.Scanner
	live    *session.Live
	log     *slog.Logger
	now     func() time.Time
	sync    bool

	mu    sync.Mutex
	steps map[session.ID]*stepMark
	// extras are files outside the roots (or ignored in them) that the
	// file tools touched, per session: recorded by every later checkpoint.
	extras map[session.ID][]string
}

type stepMark struct {
	turn, step int
	taken      bool
	done       chan struct{}
}

// Options configure [New].
type Options struct {
	Config Config
	// Home is $DSH_HOME; the store is Home/checkpoints.
	Home   string
	Live   *session.Live
	Logger *slog.Logger
	Now    func() time.Time
	// NoSync skips fsync of restored files (tests, benchmarks).
	NoSync bool
}

// New opens the store and returns the capability (not yet listening).
func New(o Options) (*Checkpoints, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	dir := filepath.Join(o.Home, Dir)
	st, err := files.Open(dir, !o.NoSync)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	sc := files.NewScanner(st, files.Options{
		MaxFileBytes: o.Config.MaxFileBytes, MaxFiles: o.Config.MaxFiles, Ignore: o.Config.Ignore,
		NoDefaultIgnores: o.Config.NoDefaultIgnores, Exclude: []string{o.Home}, Clock: o.Now,
	})
	return &Checkpoints{cfg: o.Config, store: st, scanner: sc, live: o.Live, log: o.Logger, now: o.Now, sync: !o.NoSync,
		steps: map[session.ID]*stepMark{}, extras: map[session.ID][]string{}}, nil
}

// Plugin is the checkpoint capability: checkpoints on agent/pre-step
// (the turn's) and tools/execute (a later step's, before its first tool
// that may change something), the end checkpoint on
// agent/turn-continuation, and the [*Checkpoints] provided for rewinds.
func Plugin(cfg Config) core.Plugin {
	return func(_ context.Context, h *core.Host, scope *kernel.Scope) error {
		c, err := New(Options{Config: cfg, Home: h.Site.Home, Live: h.Sessions, Logger: h.Logger, Now: h.Now, NoSync: h.Site.NoSync})
		if err != nil {
			return err
		}
		if !cfg.Disabled {
			if err := c.Install(scope, h.Agents.Hub, h.Tools); err != nil {
				return err
			}
		}
		scope.Add(func() {
			if err := c.scanner.Save(); err != nil {
				c.log.Warn("checkpoint: saving the stat index", "err", err)
			}
		})
		return core.Provide(h, scope, c)
	}
}

// Store is the object store (benchmarks, pruning).
func (c *Checkpoints) Store() *files.Store { return c.store }

// Enabled reports whether checkpoints are taken.
func (c *Checkpoints) Enabled() bool { return !c.cfg.Disabled }

// Install listens on the agents' lifecycle and the tool pipeline.
func (c *Checkpoints) Install(scope *kernel.Scope, hub *agent.Hub, tools *tool.Registry) error {
	if err := scope.Add(hub.PreStep.Use(func(ctx context.Context, ps agent.PreStep) error {
		s := ps.Agent.Session()
		if !c.tracked(s) {
			return nil
		}
		m := &stepMark{turn: ps.Turn, step: ps.Step, done: make(chan struct{})}
		if ps.Step == 1 {
			// The turn's checkpoint is the first step's as well: nothing
			// but the model's answer comes between them.
			m.taken = true
			close(m.done)
			if _, err := c.take(ctx, s, ps.Turn, 0, AtTurn); err != nil {
				c.log.Warn("checkpoint: the turn's checkpoint failed; a rewind cannot go back before it", "session", s.ID(), "turn", ps.Turn, "err", err)
			}
		}
		c.mu.Lock()
		c.steps[s.ID()] = m
		c.mu.Unlock()
		return nil
	}, kernel.Named("checkpoint"))); err != nil {
		return err
	}
	if err := scope.Add(hub.Continuation.Use(func(ctx context.Context, in agent.ContinuationInput, next kernel.Next[agent.ContinuationInput, agent.ContinuationDecision]) (agent.ContinuationDecision, error) {
		d, err := next(ctx, in)
		if err != nil || d.Continue {
			return d, err
		}
		s := in.Agent.Session()
		if c.tracked(s) {
			if _, err := c.take(ctx, s, in.Turn, 0, AtEnd); err != nil {
				c.log.Warn("checkpoint: the end-of-turn checkpoint failed", "session", s.ID(), "turn", in.Turn, "err", err)
			}
		}
		return d, nil
	}, kernel.Named("checkpoint"))); err != nil {
		return err
	}
	return scope.Add(tools.Wrap.Use(func(ctx context.Context, call tool.Call, next kernel.Next[tool.Call, tool.Result]) (tool.Result, error) {
		c.beforeTool(ctx, call, tools)
		return next(ctx, call)
	}, kernel.Named("checkpoint")))
}

// tracked reports whether s gets checkpoints: root sessions only. A
// subagent works in its parent's workspace while the parent's step runs,
// and the parent's checkpoints see what it changed.
func (c *Checkpoints) tracked(s *session.Session) bool {
	if s == nil {
		return false
	}
	if c.live != nil {
		if r := c.live.Root(s); r != nil && r != s {
			return false
		}
	}
	return true
}

// beforeTool takes a later step's checkpoint before its first tool that
// may change something; calls of the same step wait for it, so none runs
// before the state is recorded.
func (c *Checkpoints) beforeTool(ctx context.Context, call tool.Call, tools *tool.Registry) {
	if call.Host == nil {
		return
	}
	var info tool.Info
	t, ok := tools.Get(call.Name)
	if ok {
		info = t.Info()
	}
	if ok && info.ReadOnly {
		return
	}
	id := session.ID(call.Host.SessionID())
	c.mu.Lock()
	m := c.steps[id]
	if m == nil {
		c.mu.Unlock()
		return
	}
	path := ""
	if ok && (info.Kind == tool.KindEdit || info.Kind == tool.KindDelete || info.Kind == tool.KindMove) {
		path = argPath(call.Args, call.Host.Cwd())
	}
	first := !m.taken
	m.taken = true
	c.mu.Unlock()
	s, _ := c.live.Get(id)
	if s == nil {
		return
	}
	if path != "" && !c.scanner.Covers(c.roots(s), path) {
		// A file the scan does not see (outside the workspace, ignored,
		// too big): recorded by name from now on, and by this step's
		// checkpoint, taken now if the step already has one.
		if c.addExtra(id, path) && !first {
			<-m.done
			if _, err := c.take(ctx, s, m.turn, m.step, AtStep); err != nil {
				c.log.Warn("checkpoint: recording a file outside the workspace failed", "path", path, "err", err)
			}
			return
		}
	}
	if !first {
		<-m.done
		return
	}
	defer close(m.done)
	if _, err := c.take(ctx, s, m.turn, m.step, AtStep); err != nil {
		c.log.Warn("checkpoint: the step's checkpoint failed; a rewind cannot land inside this step", "session", id, "turn", m.turn, "step", m.step, "err", err)
	}
}

// argPath is the file a file tool's arguments name (file_path, path).
func argPath(args json.RawMessage, cwd string) string {
	var a struct {
		FilePath string `json:"file_path"`
		Path     string `json:"path"`
	}
	if json.Unmarshal(args, &a) != nil {
		return ""
	}
	p := a.FilePath
	if p == "" {
		p = a.Path
	}
	if p == "" {
		return ""
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(cwd, p)
	}
	return filepath.Clean(p)
}

func (c *Checkpoints) addExtra(id session.ID, path string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.extras[id] {
		if p == path {
			return false
		}
	}
	c.extras[id] = append(c.extras[id], path)
	return true
}

// roots are the directories a checkpoint of s records.
func (c *Checkpoints) roots(s *session.Session) []string {
	cwd := s.Cwd()
	out := []string{cwd}
	for _, r := range c.cfg.Roots {
		if !filepath.IsAbs(r) {
			r = filepath.Join(cwd, r)
		}
		out = append(out, filepath.Clean(r))
	}
	return out
}

// sessionExtras are the extra files of s: those noted in this process
// and those its newest checkpoint recorded (a resumed session).
//
// Only the newest checkpoint is needed, so the log is read backwards to it
// (a step's worth of events): folding the whole history here, at every
// checkpoint, made each step cost more the longer the session — 43% of
// dsh's CPU over a 4,000-step turn.
func (c *Checkpoints) sessionExtras(s *session.Session) []string {
	c.mu.Lock()
	have := c.extras[s.ID()]
	c.mu.Unlock()
	if len(have) > 0 {
		return append([]string(nil), have...)
	}
	if id, ok := newestCheckpoint(s); ok {
		if cp, err := c.store.Checkpoint(id); err == nil && !cp.Extras.IsZero() {
			if ents, err := c.store.ExtraEntries(cp.Extras); err == nil {
				for _, e := range ents {
					c.addExtra(s.ID(), e.Name)
				}
			}
		}
		c.mu.Lock()
		have = c.extras[s.ID()]
		c.mu.Unlock()
	}
	return append([]string(nil), have...)
}

// scan records the current state of s's workspace.
func (c *Checkpoints) scan(ctx context.Context, s *session.Session) (files.Result, error) {
	return c.scanner.Scan(ctx, c.roots(s), c.sessionExtras(s))
}

// newestCheckpoint is the id of the newest checkpoint s's log references:
// one taken, or the state a rewind found or left (the marks of history).
func newestCheckpoint(s *session.Session) (files.Hash, bool) {
	var id files.Hash
	s.Backward(int64(s.Len()), func(e session.Event) bool {
		switch e.Type {
		case TypeTaken:
			if t, err := session.Decode[Taken](e); err == nil {
				id = t.ID
			}
		case TypeRestoreStart:
			if rs, err := session.Decode[RestoreStart](e); err == nil {
				id = rs.From
			}
		case TypeRestored:
			if r, err := session.Decode[Restored](e); err == nil {
				id = r.After
			}
		}
		return id.IsZero()
	})
	return id, !id.IsZero()
}

// take scans and logs a checkpoint inside the open turn.
func (c *Checkpoints) take(ctx context.Context, s *session.Session, turn, step int, at string) (Taken, error) {
	start := c.now()
	r, err := c.scan(ctx, s)
	if err != nil {
		return Taken{}, err
	}
	t := takenOf(r, turn, step, at, c.now().Sub(start))
	if err := c.store.Reference(string(s.ID()), r.ID); err != nil {
		return t, err
	}
	_, err = writer(s).AppendIf(ctx, func(ts session.TurnState) bool { return ts.Open }, TypeTaken, t, nil)
	if errors.Is(err, session.ErrCondition) {
		err = errors.New("checkpoint: the turn ended before its checkpoint was recorded")
	}
	return t, err
}

func takenOf(r files.Result, turn, step int, at string, took time.Duration) Taken {
	return Taken{Turn: turn, Step: step, At: at, ID: r.ID, Files: r.Stats.Files, Hashed: r.Stats.Hashed,
		Stored: r.Stats.Stored, StoredBytes: r.Stats.StoredBytes, Ignored: r.Stats.Ignored, Oversize: r.Stats.Oversize,
		Unscanned: r.Stats.Unscanned, Limited: r.Checkpoint.Limited, Micros: took.Microseconds()}
}

// writer is how this capability records its events.
func writer(s *session.Session) session.Writer { return s.Writer(ownership.Checkpoints) }

// Prune removes the checkpoints of sessions exists says are gone, and
// every object no other session's checkpoint uses.
func (c *Checkpoints) Prune(exists func(id string) bool) (files.Pruned, error) {
	return c.store.Prune(exists, c.now())
}

func plural(n int, one string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %ss", n, strings.TrimSuffix(one, "s"))
}

// Rewind is the embedder's one call: it rewinds agent a's session on host
// h, where [Plugin] is installed (see [Checkpoints.Rewind]).
func Rewind(ctx context.Context, h *core.Host, a agent.Agent, r Request) (Report, error) {
	c, err := core.Need[*Checkpoints](h)
	if err != nil {
		return Report{Request: r}, fmt.Errorf("checkpoint: %w", err)
	}
	return c.Rewind(ctx, a.Session(), r)
}
