// Package transcript keeps a Claude Code-format transcript of every live
// session, the file hook payloads name as transcript_path: JSONL lines of
// type user, assistant and system, each with Claude Code's envelope (uuid,
// parentUuid, sessionId, timestamp, cwd, isSidechain, userType, version)
// around a message in Anthropic's content-block shape (text, thinking,
// tool_use, tool_result), tool results carrying Claude Code's structured
// toolUseResult. Hooks written for Claude Code — a Stop hook that greps
// the last assistant line for a marker, a chat logger — read it unchanged.
//
// The transcript is derived, never a source: the session log stays the
// record. When a session goes live (created, forked) its file is written
// from the log, then each new event is appended as it happens,
// synchronously on the appending goroutine, so a Stop hook sees the final
// assistant message. Ids are derived from the session and event, so a
// rewrite reproduces the same lines.
//
// A resumed session appends instead of rewriting (rewriting a 100k-event
// transcript was most of a resume's time): at each turn end and on close
// the writer records a mark beside the file — the events written, the
// file's length, where its last line starts and that line's uuid, the
// converter's pending state. On resume the mark is trusted only if the
// file still holds that prefix (its last line ends at the recorded length
// with the recorded uuid) and the log's event before the mark is the one
// recorded; the file is then cut back to the mark (dropping lines a
// crash left after it) and the events after the mark are appended. Any
// other case rewrites the whole file and logs why. dsh reads back only
// the mark and the tail of that one line.
package transcript

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dshq/dsh/internal/claudemsg"
	"github.com/dshq/dsh/internal/private"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
)

// Dir is the transcripts' directory under $DSH_HOME.
const Dir = "transcripts"

// Writer writes the transcripts of a set of live sessions.
type Writer struct {
	dir     string
	version string
	log     *slog.Logger
	live    *session.Live

	// mu guards files. Every event of every session looks its transcript
	// up here, so the lookup is read-locked: under an exclusive lock each
	// streamed chunk of 50 sessions queued behind the others' lookups (and
	// a descheduled holder's). Each file has its own lock for its writes.
	mu    sync.RWMutex
	files map[session.ID]*file
}

// file is one session's open transcript and what converting its next
// events needs.
type file struct {
	mu    sync.Mutex
	f     *os.File
	next  int64  // the next seq to write
	prev  string // the uuid of the last line (the next line's parentUuid)
	conv  claudemsg.Converter
	calls map[llm.CallID]session.ToolCall
	todos json.RawMessage // the current todo list
	old   json.RawMessage // the list before the last todo_write
	env   envelope
	bad   bool // a write failed: stop writing, the log said so once

	size   int64  // the file's length after the last write
	lineAt int64  // where the last line starts
	last   string // the type of event next-1
	lastAt int64  // its time

	buf []byte // an event's lines, encoded, reused for the next event's
}

// mark is what a resume needs to append to a transcript instead of
// rewriting it (see the package doc), kept in a hidden file beside it.
type mark struct {
	Format    int                             `json:"format"`
	SessionID string                          `json:"sessionId"`
	AgentID   string                          `json:"agentId,omitempty"`
	Cwd       string                          `json:"cwd"`
	Version   string                          `json:"version"`
	Next      int64                           `json:"next"`
	Size      int64                           `json:"size"`
	LineAt    int64                           `json:"lineAt"`
	Prev      string                          `json:"prev"`
	LastType  string                          `json:"lastType"`
	LastTime  int64                           `json:"lastTime"`
	Calls     map[llm.CallID]session.ToolCall `json:"calls,omitempty"`
	Todos     json.RawMessage                 `json:"todos,omitempty"`
	Old       json.RawMessage                 `json:"old,omitempty"`
}

// markFormat changes when the lines a log converts to change, so an
// older dsh's transcript is rewritten rather than continued.
const markFormat = 1

// envelope is the part of every line that names the session.
type envelope struct {
	sessionID string
	agentID   string // set for a subagent's transcript (a sidechain)
	cwd       string
}

// New returns a writer keeping transcripts in dir (normally
// $DSH_HOME/transcripts). version is written as each line's "version".
func New(dir, version string, log *slog.Logger) *Writer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Writer{dir: dir, version: version, log: log, files: map[session.ID]*file{}}
}

// Path is the transcript of a session: stable, whether or not it is live.
func (w *Writer) Path(id session.ID) string {
	return filepath.Join(w.dir, safeName(string(id))+".jsonl")
}

// safeName keeps a session id usable as a file name (ids are generated,
// but a resumed id comes from the user).
func safeName(id string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == 0 || r == '\\' {
			return '_'
		}
		return r
	}, id)
}

// Install writes the transcripts of live's sessions until scope closes.
func (w *Writer) Install(scope *kernel.Scope, live *session.Live) error {
	w.live = live
	name := kernel.Named("transcript")
	if err := scope.Add(live.Created.Listen(w.created, name)); err != nil {
		return err
	}
	if err := scope.Add(live.Appended.Listen(w.appended, name)); err != nil {
		return err
	}
	return scope.Defer(w.close)
}

// created continues a resumed session's transcript after its mark, or
// writes it from the log (its seed, for a forked session), and keeps the
// file open for appends.
func (w *Writer) created(_ context.Context, s *session.Session) error {
	fl, err := w.open(s)
	if err != nil {
		w.log.Warn("transcript: cannot write the transcript", "session", s.ID(), "err", err)
		return nil
	}
	fl.mu.Lock()
	defer fl.mu.Unlock()
	err = s.Range(context.Background(), fl.next, int64(s.Len()), func(e session.Event) error {
		w.write(fl, e)
		return nil
	})
	if err != nil {
		w.log.Warn("transcript: cannot read the log for the transcript", "session", s.ID(), "err", err)
	}
	return nil
}

func (w *Writer) appended(_ context.Context, ap session.Appended) error {
	w.mu.RLock()
	fl := w.files[ap.Session.ID()]
	w.mu.RUnlock()
	if fl == nil {
		return nil
	}
	fl.mu.Lock()
	defer fl.mu.Unlock()
	w.write(fl, ap.Event)
	return nil
}

func (w *Writer) open(s *session.Session) (*file, error) {
	path := w.Path(s.ID())
	env := envelope{sessionID: string(s.ID()), cwd: s.Cwd()}
	if s.Header().ParentSession != "" {
		env.sessionID, env.agentID = string(w.root(s)), string(s.ID())
	}
	fl, why := w.resume(s, path, env)
	if fl == nil {
		var err error
		if why == "" {
			// A new session: nothing to replace, so the file is created
			// in place (a temporary file, its rename and a re-open were
			// a third of the transcript's cost per session in dsh serve).
			fl, err = w.create(s, path, env)
		}
		if errors.Is(err, fs.ErrExist) {
			why = "a transcript appeared beside no mark"
		}
		if why != "" {
			w.log.Info("transcript: rewriting the whole transcript", "path", path, "reason", why)
			os.Remove(w.markPath(s.ID()))
			fl, err = w.rewrite(s, path, env)
		}
		if err != nil {
			return nil, err
		}
	}
	w.mu.Lock()
	if old := w.files[s.ID()]; old != nil {
		old.f.Close()
	}
	w.files[s.ID()] = fl
	w.mu.Unlock()
	return fl, nil
}

// markPath is the mark of a session's transcript (hidden, so a hook that
// lists the transcripts does not see it).
func (w *Writer) markPath(id session.ID) string {
	return filepath.Join(w.dir, "."+safeName(string(id))+".mark")
}

// resume opens a transcript to continue after its mark, or returns why it
// cannot ("" when there is nothing to continue: a new session).
func (w *Writer) resume(s *session.Session, path string, env envelope) (*file, string) {
	b, err := os.ReadFile(w.markPath(s.ID()))
	if errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(path); err == nil {
			return nil, "it has no mark (written by an older dsh, or the process ended before a turn did)"
		}
		return nil, ""
	}
	if err != nil {
		return nil, "its mark cannot be read: " + err.Error()
	}
	var m mark
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, "its mark is torn: " + err.Error()
	}
	switch {
	case m.Format != markFormat || m.Version != w.version:
		return nil, "its mark is from another format or dsh version"
	case m.SessionID != env.sessionID || m.AgentID != env.agentID || m.Cwd != env.cwd:
		return nil, "its mark names another session or directory"
	case m.Next <= 0 || m.Next > int64(s.Len()) || m.LineAt < 0 || m.LineAt >= m.Size:
		return nil, fmt.Sprintf("its mark (%d events) does not fit the log (%d events)", m.Next, s.Len())
	}
	var at session.Event
	found := false
	if err := s.Range(context.Background(), m.Next-1, m.Next, func(e session.Event) error {
		at, found = e, true
		return nil
	}); err != nil || !found || at.Type != m.LastType || at.Time != m.LastTime {
		return nil, "the log's event before the mark is not the one the mark recorded"
	}
	f, err := private.OpenFile(path, os.O_RDWR|os.O_APPEND)
	if err != nil {
		return nil, "it cannot be opened: " + err.Error()
	}
	if why := holds(f, m); why != "" {
		f.Close()
		return nil, why
	}
	if err := f.Truncate(m.Size); err != nil {
		f.Close()
		return nil, "it cannot be cut back to its mark: " + err.Error()
	}
	fl := &file{f: f, next: m.Next, prev: m.Prev, conv: claudemsg.Converter{Session: string(s.ID())}, calls: m.Calls, todos: m.Todos, old: m.Old, env: env,
		size: m.Size, lineAt: m.LineAt, last: m.LastType, lastAt: m.LastTime}
	if fl.calls == nil {
		fl.calls = map[llm.CallID]session.ToolCall{}
	}
	return fl, ""
}

// holds says why f does not hold the prefix m records ("" when it does):
// the line starting at m.LineAt must end at m.Size and carry m.Prev as its
// uuid. Only the line's tail is read (the uuid is among its last fields).
func holds(f *os.File, m mark) string {
	st, err := f.Stat()
	if err != nil {
		return "it cannot be read: " + err.Error()
	}
	if st.Size() < m.Size {
		return fmt.Sprintf("it is shorter (%d bytes) than its mark (%d)", st.Size(), m.Size)
	}
	from := max(m.LineAt, m.Size-4096)
	tail := make([]byte, m.Size-from)
	if _, err := f.ReadAt(tail, from); err != nil {
		return "it cannot be read: " + err.Error()
	}
	want := `,"uuid":` + string(llm.AppendJSONString(nil, m.Prev)) + `,"timestamp":`
	if tail[len(tail)-1] != '\n' || !strings.Contains(string(tail), want) {
		return "its line at the mark is not the one the mark recorded"
	}
	if m.LineAt > 0 {
		var nl [1]byte
		if _, err := f.ReadAt(nl[:], m.LineAt-1); err != nil || nl[0] != '\n' {
			return "its line at the mark does not start a line"
		}
	}
	return ""
}

// saveMark records where the transcript stands (at a turn end and on
// close). It is not synced: a mark a crash tore fails its check and the
// next resume rewrites.
func (w *Writer) saveMark(fl *file) {
	if fl.bad || fl.next == 0 || fl.prev == "" {
		return
	}
	m := mark{Format: markFormat, SessionID: fl.env.sessionID, AgentID: fl.env.agentID, Cwd: fl.env.cwd, Version: w.version,
		Next: fl.next, Size: fl.size, LineAt: fl.lineAt, Prev: fl.prev, LastType: fl.last, LastTime: fl.lastAt,
		Calls: fl.calls, Todos: fl.todos, Old: fl.old}
	b, err := json.Marshal(m)
	if err == nil {
		err = writeMark(w.markPath(session.ID(fl.conv.Session)), b)
	}
	if err != nil {
		w.log.Warn("transcript: cannot record the transcript's mark; the next resume rewrites it", "path", fl.f.Name(), "err", err)
	}
}

// writeMark overwrites the mark in place (no temporary file and rename: a
// reader that catches it empty or half-written fails to parse it and
// rewrites, as after a crash).
func writeMark(name string, b []byte) error {
	f, err := private.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// create starts the transcript of a session that has none: fs.ErrExist
// if one appeared since resume looked.
func (w *Writer) create(s *session.Session, path string, env envelope) (*file, error) {
	f, err := private.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL)
	if errors.Is(err, fs.ErrNotExist) {
		if err = private.MkdirAll(w.dir); err == nil {
			f, err = private.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL)
		}
	}
	if err != nil {
		return nil, err
	}
	return &file{f: f, conv: claudemsg.Converter{Session: string(s.ID())}, calls: map[llm.CallID]session.ToolCall{}, env: env}, nil
}

// rewrite starts a session's transcript afresh.
func (w *Writer) rewrite(s *session.Session, path string, env envelope) (*file, error) {
	if err := private.MkdirAll(w.dir); err != nil {
		return nil, err
	}
	// Rewrite through a temporary file, so a reader never sees a
	// half-written transcript and an older one is replaced whole.
	tmp, err := private.CreateTemp(w.dir, ".transcript-*")
	if err != nil {
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return nil, err
	}
	f, err := private.OpenFile(path, os.O_WRONLY|os.O_APPEND)
	if err != nil {
		return nil, err
	}
	return &file{f: f, conv: claudemsg.Converter{Session: string(s.ID())}, calls: map[llm.CallID]session.ToolCall{}, env: env}, nil
}

// root is the top-level session a child descends from (Claude Code's
// subagent transcripts carry the main session's id).
func (w *Writer) root(s *session.Session) session.ID {
	id := s.Header().ParentSession
	for range 16 {
		p, ok := w.live.Get(id)
		if !ok || p.Header().ParentSession == "" {
			break
		}
		id = p.Header().ParentSession
	}
	return id
}

func (w *Writer) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, fl := range w.files {
		fl.mu.Lock()
		w.saveMark(fl)
		fl.f.Close()
		fl.mu.Unlock()
		delete(w.files, id)
	}
	return nil
}

// write converts one event and appends its lines.
func (w *Writer) write(fl *file, e session.Event) {
	if fl.bad || e.Seq < fl.next {
		return
	}
	fl.next, fl.last, fl.lastAt = e.Seq+1, e.Type, e.Time
	lines := w.lines(fl, e)
	if len(lines) > 0 {
		// An event's lines are encoded into one reused buffer and written
		// at once: no buffered writer (and its 4 KiB) per event.
		buf := fl.buf[:0]
		lineAt, size := fl.lineAt, fl.size
		for _, l := range lines {
			n := len(buf)
			b, err := l.appendJSON(buf)
			if err != nil {
				w.log.Warn("transcript: a line cannot be encoded and is left out", "path", fl.f.Name(), "seq", e.Seq, "err", err)
				buf = buf[:n]
				continue
			}
			buf = append(b, '\n')
			lineAt = size
			size += int64(len(buf) - n)
		}
		if len(buf) > 64<<10 {
			fl.buf = nil // a long answer's buffer is not kept for every event after it
		} else {
			fl.buf = buf
		}
		if _, err := fl.f.Write(buf); err != nil {
			fl.bad = true
			w.log.Warn("transcript: writing failed; this session's transcript stops here", "path", fl.f.Name(), "err", err)
			return
		}
		fl.lineAt, fl.size = lineAt, size
	}
	if e.Type == session.TypeTurnEnd {
		w.saveMark(fl)
	}
}

// line is one transcript line. Field order follows Claude Code's.
type line struct {
	ParentUUID    *string `json:"parentUuid"`
	IsSidechain   bool    `json:"isSidechain"`
	UserType      string  `json:"userType"`
	Cwd           string  `json:"cwd"`
	SessionID     string  `json:"sessionId"`
	Version       string  `json:"version"`
	GitBranch     string  `json:"gitBranch"`
	AgentID       string  `json:"agentId,omitempty"`
	Type          string  `json:"type"`
	Subtype       string  `json:"subtype,omitempty"`
	Message       any     `json:"message,omitempty"`
	Content       string  `json:"content,omitempty"`
	Level         string  `json:"level,omitempty"`
	IsMeta        bool    `json:"isMeta,omitempty"`
	IsCompact     bool    `json:"isCompactSummary,omitempty"`
	ToolUseResult any     `json:"toolUseResult,omitempty"`
	UUID          string  `json:"uuid"`
	Timestamp     string  `json:"timestamp"`
	RequestID     string  `json:"requestId,omitempty"`
}

// appendJSON appends the line as encoding/json writes the struct, but the
// message without reflection (see claudemsg.Block.AppendJSON): a long
// answer is copied once instead of four times.
func (l line) appendJSON(dst []byte) ([]byte, error) {
	str := func(key, v string) {
		dst = append(dst, ',', '"')
		dst = append(dst, key...)
		dst = append(dst, '"', ':')
		dst = llm.AppendJSONString(dst, v)
	}
	opt := func(key, v string) {
		if v != "" {
			str(key, v)
		}
	}
	flag := func(key string, v bool) {
		dst = append(dst, ',', '"')
		dst = append(dst, key...)
		dst = append(dst, '"', ':')
		dst = strconv.AppendBool(dst, v)
	}
	value := func(key string, v any) error {
		if v == nil {
			return nil
		}
		dst = append(dst, ',', '"')
		dst = append(dst, key...)
		dst = append(dst, '"', ':')
		if a, ok := v.(llm.JSONAppender); ok {
			dst = a.AppendJSON(dst)
			return nil
		}
		b, err := json.Marshal(v)
		dst = append(dst, b...)
		return err
	}
	dst = append(dst, `{"parentUuid":`...)
	if l.ParentUUID == nil {
		dst = append(dst, "null"...)
	} else {
		dst = llm.AppendJSONString(dst, *l.ParentUUID)
	}
	flag("isSidechain", l.IsSidechain)
	str("userType", l.UserType)
	str("cwd", l.Cwd)
	str("sessionId", l.SessionID)
	str("version", l.Version)
	str("gitBranch", l.GitBranch)
	opt("agentId", l.AgentID)
	str("type", l.Type)
	opt("subtype", l.Subtype)
	if err := value("message", l.Message); err != nil {
		return nil, err
	}
	opt("content", l.Content)
	opt("level", l.Level)
	if l.IsMeta {
		flag("isMeta", true)
	}
	if l.IsCompact {
		flag("isCompactSummary", true)
	}
	if err := value("toolUseResult", l.ToolUseResult); err != nil {
		return nil, err
	}
	str("uuid", l.UUID)
	str("timestamp", l.Timestamp)
	opt("requestId", l.RequestID)
	return append(dst, '}'), nil
}

func (w *Writer) base(fl *file, e session.Event, uuid, typ string) line {
	l := line{IsSidechain: fl.env.agentID != "", UserType: "external", Cwd: fl.env.cwd, SessionID: fl.env.sessionID,
		Version: w.version, AgentID: fl.env.agentID, Type: typ, UUID: uuid, Timestamp: timestamp(e.Time)}
	if fl.prev != "" {
		p := fl.prev
		l.ParentUUID = &p
	}
	fl.prev = uuid
	return l
}

func timestamp(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

// lines are an event's transcript lines: the conversation (prompts,
// assistant blocks, tool results, context dsh added), compaction
// boundaries and how a turn ended when it did not complete.
func (w *Writer) lines(fl *file, e session.Event) []line {
	replaced := e.SurfaceOp != nil && e.SurfaceOp.Replace
	switch e.Type {
	case session.TypeToolCall:
		if tc, err := session.Decode[session.ToolCall](e); err == nil {
			fl.calls[tc.CallID] = tc
		}
		return nil
	case "todo/write":
		var tw struct {
			Todos json.RawMessage `json:"todos"`
		}
		if json.Unmarshal(e.Data, &tw) == nil && len(tw.Todos) > 0 {
			fl.old, fl.todos = fl.todos, tw.Todos
		}
		return nil
	case session.TypeTurnEnd:
		te, err := session.Decode[session.TurnEnd](e)
		if err != nil || te.Reason.Kind == session.EndCompleted {
			return nil
		}
		l := w.base(fl, e, claudemsg.UUID(fl.conv.Session, strconv.FormatInt(e.Seq, 10)), "system")
		l.Subtype, l.Level = "informational", "info"
		switch te.Reason.Kind {
		case session.EndError:
			l.Subtype, l.Level, l.Content = "api_error", "error", "Turn failed: "+te.Reason.Message
		case session.EndAborted, session.EndInterrupted:
			l.Content = "[Request interrupted by user]"
		default:
			l.Content = "Turn ended: " + te.Reason.Kind
		}
		return []line{l}
	case session.TypePromptBlocked:
		pb, err := session.Decode[session.PromptBlocked](e)
		if err != nil {
			return nil
		}
		l := w.base(fl, e, claudemsg.UUID(fl.conv.Session, strconv.FormatInt(e.Seq, 10)), "system")
		l.Subtype, l.Level, l.Content = "informational", "warning", "Prompt blocked by a hook: "+pb.Reason
		return []line{l}
	case session.TypeToolResult:
		if replaced {
			return nil // a pruned copy; the result is already in the transcript
		}
	case session.TypeAssistantMessage:
		if replaced {
			return nil
		}
	}
	entries := fl.conv.Event(e)
	var out []line
	if replaced && len(entries) > 0 {
		l := w.base(fl, e, claudemsg.UUID(fl.conv.Session, strconv.FormatInt(e.Seq, 10), "boundary"), "system")
		l.Subtype, l.Level, l.Content = "compact_boundary", "info", "Conversation compacted"
		out = append(out, l)
	}
	for _, en := range entries {
		l := w.base(fl, e, en.UUID, en.Kind)
		switch en.Kind {
		case claudemsg.KindAssistant:
			m := *en.Assistant
			m.Content = absolute(m.Content, fl.env.cwd)
			l.Message = m
		default:
			m := *en.User
			m.Content = absolute(m.Content, fl.env.cwd)
			l.Message = userMessage(m, en.Prompt)
			l.IsMeta = en.Meta
			l.IsCompact = replaced
			if e.Type == session.TypeToolResult {
				l.ToolUseResult = w.toolUseResult(fl, e)
			}
		}
		out = append(out, l)
	}
	return out
}

// userMessage writes a typed prompt's text as one string, as Claude Code
// records a prompt; anything else keeps its blocks.
func userMessage(m claudemsg.UserMessage, prompt bool) any {
	if prompt && len(m.Content) == 1 && m.Content[0].Type == "text" {
		return promptMessage{m.Role, m.Content[0].Text}
	}
	return m
}

// promptMessage is a typed prompt as Claude Code records it.
type promptMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

func (m promptMessage) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"role":`...)
	dst = llm.AppendJSONString(dst, m.Role)
	dst = append(dst, `,"content":`...)
	dst = llm.AppendJSONString(dst, m.Content)
	return append(dst, '}')
}

// absolute gives tool_use inputs absolute file paths, as Claude Code's
// transcripts (and hooks) have them.
func absolute(bs []claudemsg.Block, cwd string) []claudemsg.Block {
	out, copied := bs, false
	for i, b := range bs {
		if b.Type != "tool_use" {
			continue
		}
		if in := claudemsg.AbsInput(claudemsg.DshToolName(b.Name), b.Input, cwd); string(in) != string(b.Input) {
			if !copied {
				out, copied = append([]claudemsg.Block(nil), bs...), true
			}
			out[i].Input = in
		}
	}
	return out
}

// toolUseResult is Claude Code's structured result of the call a tool
// result answers (a failed call's is its error text).
func (w *Writer) toolUseResult(fl *file, e session.Event) any {
	tr, err := session.Decode[session.ToolResult](e)
	if err != nil {
		return nil
	}
	tc, ok := fl.calls[tr.CallID]
	delete(fl.calls, tr.CallID)
	if tr.IsError {
		return "Error: " + strings.TrimPrefix(llm.TextOf(tr.Content), "Error: ")
	}
	if !ok {
		return nil
	}
	c := claudemsg.Call{Name: tc.Name, Args: json.RawMessage(tc.Arguments), Cwd: fl.env.cwd}
	if tc.Name == "todo_write" {
		c.PreviousTodos = fl.old
	}
	return claudemsg.ToolResponse(c, claudemsg.Outcome{Content: tr.Content, Meta: tr.Meta, IsError: tr.IsError})
}

// String describes the writer (for logs).
func (w *Writer) String() string { return fmt.Sprintf("transcripts in %s", w.dir) }
