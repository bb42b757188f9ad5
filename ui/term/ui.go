// Package term is dsh's interactive terminal front-end: an inline UI (no
// alternate screen) that renders one agent's session events as they are
// appended — streamed text, Markdown answers, collapsible reasoning, tool
// cards with diffs and command output, todo checklists, per-turn token
// usage — above a live region holding a spinner, a status line and a line
// editor with history. It is a pure consumer of session events plus the
// approver that puts permission questions to the user.
//
// Everything that touches the terminal happens on one goroutine; session
// listeners, the approver, the input reader and signals only push messages
// to it.
package term

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/charmbracelet/x/ansi"
	xterm "golang.org/x/term"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/hooks"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/demo"
	"github.com/dshq/dsh/mcp"
	"github.com/dshq/dsh/permission"
	"github.com/dshq/dsh/sandbox"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/tool"
)

// Options configure [Run].
type Options struct {
	// In is the keyboard. When it is a terminal it is put in raw mode for
	// the duration of Run; any other reader is decoded the same way
	// (tests feed bytes through a pipe).
	In io.Reader
	// Out is the screen.
	Out io.Writer
	App *app.App
	// Resume continues this stored session instead of starting a new one.
	Resume session.ID
	// FirstPrompt is sent as soon as the agent is ready.
	FirstPrompt string
	// Home is $DSH_HOME; the input history lives in Home/history.
	Home string
	// Width and Height report the terminal size (defaults: Out's size, or
	// 80×24).
	Width, Height func() int
	// Env looks up environment variables (NO_COLOR, GLAMOUR_STYLE).
	Env func(string) string
	// Ready, when set, is called once the prompt is first drawn and before
	// the first key is read: start-up is over (the CLI gives back the
	// executable's start-up pages then; see internal/exepages).
	Ready func()
	// NoColor forces plain output; NO_COLOR in Env does too.
	NoColor bool
	// Version is shown in the banner.
	Version string
	// Cwd is the working directory shown in the status line (default: the
	// session's).
	Cwd string
	// PickSession starts with the list of recent sessions of the
	// directory (dsh -r without an id): typing a number resumes that one,
	// anything else starts the new session as usual.
	PickSession bool
}

// Messages to the UI goroutine.
type (
	eventMsg struct {
		cur *current
		ev  session.Event
	}
	// childMsg is an event of a descendant of the current session; chain
	// runs from the direct child down to the event's session.
	childMsg struct {
		cur   *current
		chain []session.ID
		ev    session.Event
	}
	statusMsg struct {
		ag     agent.Agent
		status agent.Status
	}
	inputMsg    struct{ b []byte }
	inputEnd    struct{ err error }
	approvalMsg struct{ a *approval }
	withdrawMsg struct{ a *approval }
	resizeMsg   struct{}
	// contMsg is a SIGCONT: dsh was continued after a stop.
	contMsg struct{}
)

// approval is one question put to the user by the approver.
type approval struct {
	req   tool.ApprovalRequest
	reply chan tool.Approval
}

// current is the agent the UI drives.
type current struct {
	h    *agent.Handle
	ag   agent.Agent
	sess *session.Session
	// from is the first seq rendered live; earlier events were replayed.
	// Only the UI goroutine touches it.
	from int64
}

type ui struct {
	o   Options
	app *app.App
	st  Styles
	md  *markdown
	out io.Writer
	scr Screen

	q    *queue
	done chan struct{}
	ctx  context.Context

	cur   atomic.Pointer[current]
	model atomic.Pointer[string] // /model override; nil: the app's model
	// lastReq is the last request the current agent sent (/context,
	// /status).
	lastReq atomic.Pointer[llm.Request]

	ed   *Editor
	hist *History
	tr   *Transcript
	view *transcriptView // the transcript view, while open (ctrl-o)
	dec  Decoder
	feed outputFeed

	status    agent.Status
	busySince time.Time
	pending   []string // steering the log has not shown yet

	approvals []*approval
	reasonEd  *Editor
	apScroll  int  // first row of the open question's command shown
	bypassAsk bool // shift-tab is asking to confirm bypassPermissions
	// planBypass: the plan card is asking to confirm approving the plan
	// into bypassPermissions.
	planBypass bool
	// rw is the open rewind picker; lastEsc the idle esc that a second
	// one makes Esc Esc.
	rw      *rewindPicker
	lastEsc time.Time
	// answerAt is when the open question starts taking answer keys (see
	// [approvalGrace]).
	answerAt time.Time
	grace    time.Duration

	// sandbox is the sandbox's status once probed (nil before).
	sandbox *sandbox.Status

	// jc suspends on ctrl-z (nil: not a terminal); suspended is set from
	// the ctrl-z until the SIGCONT that finds dsh in the foreground again,
	// and nothing is drawn meanwhile.
	jc        *jobControl
	suspended bool
	// mentionIx lists the directory for @ completion (nil until the first
	// @); mentions are the suggestions for mentionQuery, the @word typed.
	mentionIx     *mentionIndex
	mentions      []string
	mentionQuery  string
	mentionSeen   int      // how many listed paths the suggestions ranked
	mentionRanked bool     // mentions rank mentionQuery over mentionSeen paths
	mentionFiles  []string // the file suggestions among mentions
	// mentionRes are the connected MCP servers' resources by @token
	// (resTokens in listing order); resStale says they must be listed
	// again (a server changed), resListing that a listing runs;
	// resWarned are the listing failures already said.
	mentionRes map[string]mcp.Resource
	resTokens  []string
	resStale   bool
	resListing bool
	resWarned  map[string]bool
	// shells counts the ! commands running; shellN numbers them.
	shells, shellN int

	// resumeList numbers the sessions the picker last listed (/resume n);
	// sp is the open session picker.
	resumeList []store.Info
	sp         *sessionPicker

	lastCtrlC time.Time
	hint      string
	hintUntil time.Time
	frame     int
	quit      bool
	inputDone bool
	lastDraw  time.Time
}

// approvalGrace guards against keys meant for the editor answering a
// question: while the editor holds text, and until approvalGrace has passed
// since the question appeared and since the last key typed into the editor,
// keys go to the editor (esc and ctrl-c still deny), and the choices are not
// shown.
// (A variable so tests can stretch it; [Run] reads it once.)
var approvalGrace = 400 * time.Millisecond

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// Run is the interactive terminal: it starts (or resumes) an agent in the
// app's working directory and runs until the user exits or ctx ends.
func Run(ctx context.Context, o Options) error {
	if o.App == nil {
		return errors.New("term: no app")
	}
	plain := terminalDefaults(&o.In, &o.Out, &o.Env, &o.Width, &o.Height, o.NoColor)
	u := &ui{
		o: o, app: o.App, out: o.Out, st: NewStyles(plain), md: newMarkdown(plain, o.Env),
		q: newQueue(), done: make(chan struct{}), ctx: ctx, grace: approvalGrace,
	}
	u.scr.Sync = true
	if o.Home != "" {
		u.hist = LoadHistory(filepath.Join(o.Home, "history"))
	} else {
		u.hist = LoadHistory("")
	}
	u.ed = NewEditor(u.hist)
	if u.app.Config != nil && app.EditorModeKey.Get(u.app.Config) == "vim" {
		u.ed.SetVim(true)
	}

	// Terminal modes.
	if f, ok := o.In.(*os.File); ok && xterm.IsTerminal(int(f.Fd())) {
		old, err := xterm.MakeRaw(int(f.Fd()))
		if err != nil {
			return fmt.Errorf("term: raw mode: %w", err)
		}
		defer func() { _ = xterm.Restore(int(f.Fd()), old) }()
		u.jc = newJobControl(f, old, func() { u.q.push(contMsg{}) })
		defer u.jc.stop()
	}
	// Nothing may print to the terminal behind the UI's back: route the
	// default logger (and the log package) to the app's log file.
	if lg := u.app.Host.Logger; lg != nil {
		prev := slog.Default()
		slog.SetDefault(lg)
		defer slog.SetDefault(prev)
	}
	_, _ = io.WriteString(u.out, "\x1b[?2004h")
	defer func() { _, _ = io.WriteString(u.out, "\x1b[?2004l") }()
	stopResize := notifyResize(func() { u.q.push(resizeMsg{}) })
	defer stopResize()

	// Listeners: the UI is a consumer of session events and agent status.
	hub := u.app.Host.Agents.Hub
	undo := []func(){
		u.app.Host.Sessions.Appended.Listen(func(_ context.Context, ap session.Appended) error {
			c := u.cur.Load()
			if c == nil {
				return nil
			}
			if ap.Session == c.sess {
				u.q.push(eventMsg{cur: c, ev: ap.Event})
				return nil
			}
			if !nestedType(ap.Event.Type) {
				return nil
			}
			if chain := u.lineage(ap.Session, c.sess.ID()); chain != nil {
				u.q.push(childMsg{cur: c, chain: chain, ev: ap.Event})
			}
			return nil
		}),
		u.app.Host.Tools.Progress.Listen(func(_ context.Context, p tool.Progress) error {
			c := u.cur.Load()
			if c == nil || p.Call.Host == nil || p.Call.Host.SessionID() != string(c.sess.ID()) {
				return nil
			}
			if u.feed.add(p.Call.ID, p.Output) {
				u.q.push(outputMsg{cur: c})
			}
			return nil
		}),
		hub.Status.Listen(func(_ context.Context, sc agent.StatusChange) error {
			if c := u.cur.Load(); c != nil && sc.Agent == c.ag {
				u.q.push(statusMsg{ag: sc.Agent, status: sc.Status})
			}
			return nil
		}),
		hub.Request.Use(func(ctx context.Context, in agent.RequestInput, next func(context.Context, agent.RequestInput) (*llm.Request, error)) (*llm.Request, error) {
			if m := u.model.Load(); m != nil && in.Request != nil {
				// Subagents the current agent starts follow its model.
				if c := u.cur.Load(); c != nil && in.Agent != nil && (in.Agent == c.ag || u.lineage(in.Agent.Session(), c.sess.ID()) != nil) {
					in.Request.Model = *m
				}
			}
			req, err := next(ctx, in)
			if c := u.cur.Load(); err == nil && req != nil && c != nil && in.Agent == c.ag {
				u.lastReq.Store(req)
			}
			return req, err
		}),
	}
	u.resStale = true // the resources are listed on the first @
	if m := u.app.MCP; m != nil {
		undo = append(undo, m.Changed.Listen(func(context.Context, mcp.ServerStatus) error {
			u.q.push(mcpChanged{})
			return nil
		}))
	}
	defer func() {
		for _, f := range undo {
			f()
		}
	}()
	go u.readInput()

	u.banner()
	var err error
	if o.Resume != "" {
		err = u.switchTo(func(ctx context.Context) (*agent.Handle, error) { return u.app.Resume(ctx, o.Resume, u) }, "", hooks.EndOther)
	} else {
		err = u.switchTo(func(ctx context.Context) (*agent.Handle, error) { return u.app.Start(ctx, u) }, "", hooks.EndOther)
	}
	if err != nil {
		u.draw()
		_, _ = io.WriteString(u.out, u.scr.Clear())
		return err
	}
	if o.PickSession {
		u.openPicker(true)
	}
	if strings.TrimSpace(o.FirstPrompt) != "" {
		u.submit(o.FirstPrompt)
	}
	u.draw()
	if o.Env("DSH_BENCH_EXIT_READY") != "" {
		// Start-up measurement: the prompt is ready; leave at once.
		u.shutdown()
		return nil
	}
	if o.Ready != nil {
		o.Ready()
	}
	u.probeSandbox()
	u.loop(ctx)
	u.shutdown()
	return nil
}

// terminalDefaults fills in the process's terminal for what options left
// unset and reports whether output is plain (no colour).
func terminalDefaults(in *io.Reader, out *io.Writer, env *func(string) string, width, height *func() int, noColor bool) (plain bool) {
	if *out == nil {
		*out = os.Stdout
	}
	if *in == nil {
		*in = os.Stdin
	}
	if *env == nil {
		*env = os.Getenv
	}
	if *width == nil {
		*width = sizeFunc(*out, true)
	}
	if *height == nil {
		*height = sizeFunc(*out, false)
	}
	e := *env
	return noColor || e("NO_COLOR") != "" || e("TERM") == "dumb"
}

func sizeFunc(w io.Writer, width bool) func() int {
	def := 24
	if width {
		def = 80
	}
	f, ok := w.(*os.File)
	if !ok || !xterm.IsTerminal(int(f.Fd())) {
		return func() int { return def }
	}
	return func() int {
		c, r, err := xterm.GetSize(int(f.Fd()))
		if err != nil || c <= 0 || r <= 0 {
			return def
		}
		if width {
			return c
		}
		return r
	}
}

func (u *ui) readInput() {
	buf := make([]byte, 4096)
	for {
		n, err := u.o.In.Read(buf)
		if n > 0 {
			u.q.push(inputMsg{b: append([]byte(nil), buf[:n]...)})
		}
		if err != nil && u.jc != nil && u.jc.backgroundRead(err) {
			// Not the end of input: the terminal refused a background
			// read. Wait until dsh is in the foreground again.
			select {
			case <-u.done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		if err != nil {
			u.q.push(inputEnd{err: err})
			return
		}
		select {
		case <-u.done:
			return
		default:
		}
	}
}

// loop is the UI goroutine.
func (u *ui) loop(ctx context.Context) {
	tick := time.NewTicker(80 * time.Millisecond)
	defer tick.Stop()
	var escTimer <-chan time.Time
	var drawTimer <-chan time.Time
	dirty, lazy := false, false
	for !u.quit {
		select {
		case <-ctx.Done():
			u.quit = true
		case <-u.q.ready:
			for _, m := range u.q.drain() {
				u.handle(m)
				if _, ok := m.(outputMsg); ok {
					// A command's output is shown at the spinner's pace:
					// a chatty command must not cost a redraw per line.
					lazy = true
				} else {
					dirty = true
				}
			}
		case <-tick.C:
			if lazy {
				lazy, dirty = false, true
			}
			if u.animating() {
				u.frame++
				dirty = true
			}
			if u.hint != "" && time.Now().After(u.hintUntil) {
				u.hint = ""
				dirty = true
			}
		case <-escTimer:
			escTimer = nil
			u.keys(u.dec.Flush())
			dirty = true
		case <-drawTimer:
			drawTimer = nil
		}
		if u.dec.Pending() && escTimer == nil {
			escTimer = time.After(40 * time.Millisecond)
		}
		if u.quit {
			break
		}
		// Coalesce redraws to at most one per 16 ms.
		if dirty && drawTimer == nil {
			if wait := 16*time.Millisecond - time.Since(u.lastDraw); wait > 0 {
				drawTimer = time.After(wait)
			} else {
				u.draw()
				dirty = false
			}
		}
	}
}

func (u *ui) animating() bool {
	return u.busy() || len(u.approvals) > 0
}

func (u *ui) busy() bool {
	return u.status == agent.Running || u.tr.Busy()
}

func (u *ui) handle(m any) {
	switch m := m.(type) {
	case eventMsg:
		if m.cur != u.cur.Load() || m.ev.Seq < m.cur.from {
			return // a session we left, or an event already replayed
		}
		u.tr.Apply(m.ev)
		u.viewEvent(m.ev)
		switch m.ev.Type {
		case session.TypeUserMessage, session.TypeSteeringMessage:
			if p, err := session.Decode[session.Prompt](m.ev); err == nil {
				u.dropPending(llm.TextOf(p.Content))
			}
		case session.TypeTurnStart:
			if u.busySince.IsZero() {
				u.busySince = time.Now()
			}
		}
	case childMsg:
		if m.cur != u.cur.Load() {
			return
		}
		u.tr.ApplyChild(m.chain, m.ev)
	case statusMsg:
		if c := u.cur.Load(); c == nil || m.ag != c.ag {
			return
		}
		was := u.status
		u.status = m.status
		switch m.status {
		case agent.Running:
			if u.busySince.IsZero() {
				u.busySince = time.Now()
			}
		default:
			if was == agent.Running && !u.busySince.IsZero() {
				u.notify(time.Since(u.busySince), false)
			}
			u.busySince = time.Time{}
			u.restorePending()
		}
	case inputMsg:
		u.keys(u.dec.Feed(m.b))
	case inputEnd:
		u.inputDone = true
		u.keys(u.dec.Flush())
		u.quit = true
	case approvalMsg:
		if u.view != nil {
			u.closeView() // a question is never hidden behind the view
		}
		u.approvals = append(u.approvals, m.a)
		if len(u.approvals) == 1 && !u.busySince.IsZero() {
			u.notify(time.Since(u.busySince), true)
		}
		if len(u.approvals) == 1 {
			u.holdAnswers()
		}
	case withdrawMsg:
		if i := slices.Index(u.approvals, m.a); i >= 0 {
			if i == 0 {
				u.reasonEd, u.planBypass = nil, false
				u.holdAnswers() // the next question, if any, is new
			}
			u.approvals = slices.Delete(u.approvals, i, i+1)
		}
	case outputMsg:
		ids, out := u.feed.take()
		if m.cur != u.cur.Load() {
			return
		}
		for _, id := range ids {
			u.tr.Output(id, out[id])
			if u.view != nil {
				if vc, lc := u.view.card(id), u.tr.card(id); vc != nil && lc != nil {
					vc.Tail = lc.Tail // the view shows the live tail
				}
			}
		}
	case compactDone:
		u.compacted(m)
	case rewindListed:
		u.rewindListed(m)
	case diffListed:
		u.diffListed(m)
	case rewindDone:
		u.rewound(m)
	case customReady:
		u.customDone(m)
	case shellDone:
		u.shellFinished(m)
	case mentionReady:
		u.mentionSuggest()
	case clipRead:
		u.clipboardRead(m)
	case resourcesListed:
		u.resourcesArrived(m)
		u.mentionSuggest()
	case mcpChanged:
		u.resStale = true
		if _, _, typing := u.ed.mentionWord(); typing {
			u.listResources()
		}
	case mentionSend:
		u.mentionSent(m)
	case sandboxMsg:
		u.sandbox = &m.status
	case resizeMsg:
	case contMsg:
		u.continued()
	}
}

// nestedType reports whether a descendant's event shows under a task card.
func nestedType(typ string) bool {
	switch typ {
	case session.TypeToolCall, session.TypeToolResult, session.TypeAssistantMessage,
		session.TypeApprovalRequest, session.TypeApprovalAnswer:
		return true
	}
	return false
}

// lineage returns the sessions from root's direct child down to s when s
// descends from root (through the live sessions: session.Live.Lineage), or
// nil.
func (u *ui) lineage(s *session.Session, root session.ID) []session.ID {
	up := u.app.Host.Sessions.Lineage(s)
	i := slices.IndexFunc(up, func(x *session.Session) bool { return x.ID() == root })
	if i <= 0 {
		return nil
	}
	out := make([]session.ID, i)
	for j := range i {
		out[i-1-j] = up[j].ID()
	}
	return out
}

func (u *ui) dropPending(text string) {
	if i := slices.Index(u.pending, strings.TrimSpace(text)); i >= 0 {
		u.pending = slices.Delete(u.pending, i, i+1)
	}
}

// restorePending runs when the agent stops: steering it never took (an
// interrupt drops queued input) goes back into an empty editor, or is
// reported as discarded.
func (u *ui) restorePending() {
	if len(u.pending) == 0 {
		return
	}
	text := strings.Join(u.pending, "\n")
	u.pending = nil
	if strings.TrimSpace(u.ed.Text()) == "" {
		u.ed.SetText(text)
		u.setHint("your queued message was not sent: it is back in the editor", 4*time.Second)
		return
	}
	u.tr.Note(u.st.Warn("queued message discarded: "+firstLine(sanitize(text))) + u.st.Dim("  (↑ recalls it from history)"))
}

// holdAnswers (re)starts the grace before the open question takes answer
// keys.
func (u *ui) holdAnswers() { u.answerAt = time.Now().Add(u.grace) }

// answerReady reports whether keys now answer the open question rather
// than go to the editor.
func (u *ui) answerReady(now time.Time) bool {
	return u.reasonEd != nil || (u.ed.Text() == "" && !now.Before(u.answerAt))
}

// keys routes keys to the approval question or the editor.
func (u *ui) keys(ks []Key) {
	for _, k := range ks {
		if u.quit {
			return
		}
		if k.Kind == KeyCtrlZ {
			// Whatever is open (a question, the transcript view, a
			// picker) waits, as it was, for fg.
			u.suspend()
			continue
		}
		if u.bypassAsk && len(u.approvals) == 0 {
			u.bypassKey(k)
			continue
		}
		if u.rw != nil && len(u.approvals) == 0 {
			u.rewindKey(k)
			continue
		}
		if u.sp != nil && len(u.approvals) == 0 {
			u.pickerKey(k)
			continue
		}
		if u.view != nil {
			u.viewKey(k)
			continue
		}
		if k.Kind == KeyCtrlO && len(u.approvals) == 0 {
			u.openView()
			continue
		}
		if len(u.approvals) > 0 {
			if u.answerReady(time.Now()) || k.Kind == KeyEsc || k.Kind == KeyCtrlC {
				u.approvalKey(k)
				continue
			}
			// Typed for the editor (text in progress, or just as the
			// question appeared): it stays there and the question waits.
			u.editorKey(k)
			u.holdAnswers()
			continue
		}
		u.editorKey(k)
	}
}

func (u *ui) editorKey(k Key) {
	defer u.mentionSuggest()
	if k.Kind == KeyTab && u.mentionAccept() {
		return
	}
	if k.Kind == KeyCtrlV {
		u.pasteClipboard()
		return
	}
	if k.Kind == KeyPaste {
		// A file dragged onto the terminal arrives as its path: an image
		// becomes a mention, attached when the message is sent.
		if p, ok := pastedImage(k.Text, u.cwd()); ok {
			k.Text = mentionToken(p) + " "
			if e := u.ed; e.pos > 0 && !unicode.IsSpace(e.buf[e.pos-1]) {
				k.Text = " " + k.Text
			}
		}
	}
	switch u.ed.Handle(k) {
	case ActSubmit:
		text := u.ed.Expanded()
		if strings.TrimSpace(text) == "" {
			return
		}
		imgs := u.ed.Images()
		u.hist.Add(text)
		u.ed.Reset()
		u.submit(text, imgs...)
	case ActEOF:
		u.quit = true
	case ActInterrupt:
		switch {
		case u.busy():
			u.interrupt()
		case u.ed.Text() != "":
			u.ed.Reset()
		case time.Since(u.lastCtrlC) < 2*time.Second:
			u.quit = true
		default:
			u.lastCtrlC = time.Now()
			u.setHint("press ctrl-c again to exit", 2*time.Second)
		}
	case ActEsc:
		if u.busy() {
			u.interrupt()
		} else {
			u.escIdle()
		}
	case ActRedraw:
		_, _ = io.WriteString(u.out, "\x1b[H\x1b[2J")
		u.scr.Reset()
	case ActTab:
		u.complete()
	case ActBackTab:
		u.cycleMode()
	case ActSuspend:
		u.suspend()
	}
}

func (u *ui) interrupt() {
	if c := u.cur.Load(); c != nil {
		c.ag.Cancel("interrupted by user")
		u.setHint("interrupting…", 2*time.Second)
	}
}

func (u *ui) setHint(s string, d time.Duration) {
	u.hint, u.hintUntil = s, time.Now().Add(d)
}

// approvalKey answers the open question: y, a, n (then a reason), esc.
func (u *ui) approvalKey(k Key) {
	a := u.approvals[0]
	if isPlan(a.req) && u.reasonEd == nil {
		u.planKey(a, k)
		return
	}
	if u.reasonEd != nil {
		switch u.reasonEd.Handle(k) {
		case ActSubmit:
			reason := strings.TrimSpace(u.reasonEd.Text())
			if isPlan(a.req) {
				reason = planRejected(reason)
			}
			u.answer(a, tool.Approval{Allow: false, Reason: reason, By: "user"})
		case ActEsc, ActInterrupt, ActEOF:
			ans := tool.Approval{Allow: false, By: "user"}
			if isPlan(a.req) {
				ans.Reason = keepPlanning
			}
			u.answer(a, ans)
		}
		return
	}
	switch {
	case k.Kind == KeyRune && (k.Rune == 'y' || k.Rune == 'Y'):
		u.answer(a, tool.Approval{Allow: true, By: "user"})
	case k.Kind == KeyRune && (k.Rune == 'a' || k.Rune == 'A') && len(a.req.Suggestions) > 0:
		// The answer carries the rules the question offered: they are what
		// the user saw and accepted.
		u.answer(a, tool.Approval{Allow: true, Rules: slices.Clone(a.req.Suggestions), By: "user"})
	case k.Kind == KeyRune && (k.Rune == 'p' || k.Rune == 'P') && len(a.req.Suggestions) > 0 && u.app.Permission != nil:
		// Always for this project: the same rules, kept in the project's
		// local settings (and in force at once, process-wide).
		if file, err := u.saveProjectRules(a.req.Suggestions); err != nil {
			u.tr.Note(u.st.Err(sanitize(oneLine(err.Error()))))
		} else {
			u.tr.Note(u.st.Dim("saved to "+shortPath(file, u.o.Env)+": ") + sanitize(strings.Join(a.req.Suggestions, ", ")))
			u.answer(a, tool.Approval{Allow: true, By: "user"})
		}
	case k.Kind == KeyUp || k.Kind == KeyDown:
		// A command taller than the screen scrolls inside the question.
		if k.Kind == KeyUp {
			u.apScroll = max(0, u.apScroll-1)
		} else {
			u.apScroll++
		}
	case k.Kind == KeyRune && (k.Rune == 'n' || k.Rune == 'N'):
		u.reasonEd = NewEditor(nil)
	case k.Kind == KeyEsc:
		u.answer(a, tool.Approval{Allow: false, By: "user"})
	case k.Kind == KeyCtrlC:
		u.answer(a, tool.Approval{Allow: false, Reason: "the user interrupted the turn", By: "user"})
		u.interrupt()
	}
}

// saveProjectRules writes allow rules to the project's local settings
// (.dsh/settings.local.json) and returns the file.
func (u *ui) saveProjectRules(rules []string) (string, error) {
	project := u.cwd()
	if u.app.Config != nil && u.app.Config.Project() != "" {
		project = u.app.Config.Project()
	}
	file := permission.LocalSettingsFile(project)
	for _, r := range rules {
		if err := u.app.Permission.SaveRule(file, permission.Rule{Text: r, Behavior: permission.Allow}); err != nil {
			return file, err
		}
	}
	return file, nil
}

func (u *ui) answer(a *approval, ans tool.Approval) {
	a.reply <- ans // buffered: never blocks
	u.reasonEd, u.apScroll, u.planBypass = nil, 0, false
	if i := slices.Index(u.approvals, a); i >= 0 {
		u.approvals = slices.Delete(u.approvals, i, i+1)
	}
	u.holdAnswers() // the next question, if any, is new

}

// Approve implements [tool.Approver]: it runs on the agent's goroutine and
// waits for the UI goroutine to put the question to the user.
func (u *ui) Approve(ctx context.Context, req tool.ApprovalRequest) (tool.Approval, error) {
	closed := tool.Approval{Allow: false, Reason: "the terminal was closed before the user answered", By: "user"}
	select {
	case <-u.done:
		return closed, nil
	default:
	}
	a := &approval{req: req, reply: make(chan tool.Approval, 1)}
	u.q.push(approvalMsg{a: a})
	select {
	case ans := <-a.reply:
		return ans, nil
	case <-ctx.Done():
		u.q.push(withdrawMsg{a: a})
		return tool.Approval{}, context.Cause(ctx)
	case <-u.done:
		return closed, nil
	}
}

// submit sends a prompt (with the images pasted into it), steers the
// running turn, or runs a command.
func (u *ui) submit(text string, imgs ...clipImage) {
	if len(imgs) > 0 && (strings.HasPrefix(text, "/") && !strings.HasPrefix(text, "//") || strings.HasPrefix(text, "!")) {
		u.tr.Note(u.st.Warn("the pasted image is not sent: a command takes no image"))
	}
	if strings.HasPrefix(text, "/") && !strings.HasPrefix(text, "//") {
		u.command(strings.TrimSpace(text))
		return
	}
	if line, ok := strings.CutPrefix(text, "!"); ok && strings.TrimSpace(line) != "" {
		u.shell(strings.TrimSpace(line))
		return
	}
	text = strings.TrimPrefix(text, "/")
	c := u.cur.Load()
	if c == nil {
		u.tr.Note(u.st.Err("no agent is running (try /clear)"))
		return
	}
	pasted, err := imageParts(imgs, u.imagePolicy())
	if err != nil {
		u.mentionSent(mentionSend{cur: c, text: text, images: imgs, err: err})
		return
	}
	content := append([]llm.Block{llm.Text(text)}, pasted...)
	var refs []resourceRef
	if m := u.app.MCP; m != nil {
		refs = mentionedResources(text, u.cwd(), func(name string) bool { _, ok := m.Server(name); return ok })
	}
	if len(mentionedPaths(text, u.cwd())) > 0 || len(refs) > 0 {
		// Reading may ask for approval, or wait on a server: off the UI
		// goroutine.
		host, _ := c.ag.(tool.Host)
		reg, dir := u.app.Host.Tools, u.cwd()
		images := u.imagePolicy()
		mgr := u.app.MCP
		go func() {
			blocks, warnings, err := attachMentions(u.ctx, reg, host, u, dir, text, images)
			if err == nil && len(refs) > 0 {
				rb, rw, rerr := attachResources(u.ctx, mgr, refs, images)
				blocks, warnings, err = append(blocks, rb...), append(warnings, rw...), rerr
			}
			u.q.push(mentionSend{cur: c, text: text, content: append(content, blocks...), warnings: warnings, err: err, images: imgs})
		}()
		return
	}
	u.send(c, text, content)
}

// mentionSend is a message whose @mentions were read.
type mentionSend struct {
	cur      *current
	text     string
	content  []llm.Block
	warnings []string
	err      error       // a refusal: nothing is sent
	images   []clipImage // pasted into the message (back to the editor on a refusal)
}

func (u *ui) mentionSent(m mentionSend) {
	for _, w := range m.warnings {
		u.tr.Note(u.st.Warn(sanitize(w)))
	}
	if m.err != nil {
		u.tr.Note(u.st.Err(sanitize(m.err.Error())))
		if u.ed.Text() == "" {
			u.ed.SetText(m.text) // the message back, to edit and send again
			u.ed.SetImages(m.images)
		}
		return
	}
	if m.cur != u.cur.Load() {
		u.tr.Note(u.st.Warn("the session changed while the mentioned files were read; not sent"))
		return
	}
	u.send(m.cur, m.text, m.content)
}

// send prompts the agent, or steers its running turn.
func (u *ui) send(c *current, text string, content []llm.Block) {
	var err error
	if c.ag.Status() == agent.Running {
		err = c.ag.Steer(u.ctx, content, llm.Source{})
		if err == nil {
			u.pending = append(u.pending, strings.TrimSpace(text))
		}
	} else {
		u.busySince = time.Now()
		err = c.ag.Send(u.ctx, content, llm.Source{})
	}
	if err != nil {
		u.tr.Note(u.st.Err("could not send: " + sanitize(err.Error())))
	}
}

// switchTo replaces the current agent by the one start makes, and replays
// the new session's stored events.
// endReason is why the old agent's session ends (its SessionEnd hooks'
// reason: clear or resume).
func (u *ui) switchTo(start func(context.Context) (*agent.Handle, error), banner, endReason string) error {
	h, err := start(u.ctx)
	if err != nil {
		u.tr.Note(u.st.Err(sanitize(err.Error())))
		return err
	}
	old := u.cur.Load()
	defer func() {
		// The old agent goes after the new one is published, so its
		// closing events are ignored and a failed switch keeps it.
		if old != nil {
			u.app.SetEndReason(old.ag.ID(), endReason)
			dctx, cancel := context.WithTimeout(context.WithoutCancel(u.ctx), 10*time.Second)
			_ = old.h.Dispose(dctx)
			cancel()
		}
	}()
	u.status, u.busySince, u.pending = agent.Idle, time.Time{}, nil
	u.lastReq.Store(nil)
	sess := h.Agent.Session()
	// Publish first, then read the log: events appended in between are
	// both read here and delivered, and the UI skips the delivered copies
	// below c.from.
	c := &current{h: h, ag: h.Agent, sess: sess}
	u.cur.Store(c)
	c.from = int64(sess.Len())
	prev := u.tr
	u.tr = u.newTranscript()
	if prev != nil {
		u.tr.ShowThinking = prev.ShowThinking
		u.tr.wrote = prev.wrote
		if out := prev.Take(); out != "" {
			u.tr.out.WriteString(out)
		}
	}
	if banner != "" {
		u.tr.Note(u.st.Dim(banner))
	}
	if err := u.replay(sess, c.from); err != nil {
		return fmt.Errorf("term: reading the log of %s: %w", sess.ID(), err)
	}
	return nil
}

func (u *ui) newTranscript() *Transcript {
	tools := func(name string) (tool.Tool, bool) { return u.app.Host.Tools.Get(name) }
	t := NewTranscript(u.st, u.md, tools, u.width)
	t.ledger = newLedger(u.app.Prices)
	return t
}

// replayTurns is how many stored turns a resumed session shows.
const replayTurns = 10

// replay shows the session's last replayTurns turns (of its events before
// seq n) and counts the earlier ones' usage. It streams the log from the
// store, so a long session is never held whole: the turn starts are found
// from the types memory keeps, and the hidden part is read only for its
// usage.
func (u *ui) replay(sess *session.Session, n int64) error {
	ctx := context.Background()
	start, turns, base := int64(-1), 0, sess.Base()
	sess.Backward(n, func(e session.Event) bool {
		if e.Seq < base {
			return false // memory holds only some events before base
		}
		if e.Type == session.TypeTurnStart {
			turns++
			if turns == replayTurns {
				start = e.Seq
				return false
			}
		}
		return true
	})
	if start < 0 && base > 0 {
		// Resumed from a snapshot: the turns before it are in the store.
		var starts []int64 // the last turn starts before base
		err := sess.Range(ctx, 0, base, func(e session.Event) error {
			if e.Type == session.TypeTurnStart {
				starts = append(starts, e.Seq)
				if len(starts) > replayTurns {
					starts = starts[1:]
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if need := replayTurns - turns; len(starts) >= need {
			start = starts[len(starts)-need]
		}
	}
	start = max(start, 0)
	if start > 0 {
		hidden := 0
		var total llm.Usage
		err := sess.Range(ctx, 0, start, func(e session.Event) error {
			switch e.Type {
			case session.TypeTurnStart:
				hidden++
			case session.TypeAssistantMessage:
				total.Add(u.tr.ledger.account([]session.Event{e}, u.modelName()))
			}
			return nil
		})
		if err != nil {
			return err
		}
		u.tr.Note(u.st.Dim(fmt.Sprintf("… %d %s not shown (see: dsh sessions show %s)", hidden, plural(hidden, "earlier turn", "earlier turns"), sess.ID())))
		// Their usage still counts in the session's totals and cost.
		u.tr.Total.Add(total)
		u.tr.Turns += hidden
	}
	return sess.Range(ctx, start, n, func(e session.Event) error {
		if e.Type != session.TypeAssistantChunk { // the message follows
			u.tr.Apply(e)
		}
		return nil
	})
}

func (u *ui) width() int  { return max(20, u.o.Width()) }
func (u *ui) height() int { return max(5, u.o.Height()) }

func (u *ui) modelName() string {
	if m := u.model.Load(); m != nil {
		return *m
	}
	return u.app.Model
}

func (u *ui) isDemo() bool { return u.modelName() == demo.ModelID }

func (u *ui) cwd() string {
	if u.o.Cwd != "" {
		return u.o.Cwd
	}
	if c := u.cur.Load(); c != nil && c.sess.Cwd() != "" {
		return c.sess.Cwd()
	}
	wd, _ := os.Getwd()
	return wd
}

func (u *ui) banner() {
	u.tr = u.newTranscript()
	v := u.o.Version
	if v == "" {
		v = "dev"
	}
	lines := []string{
		u.st.Accent("✻ dsh") + " " + u.st.Dim(v) + u.st.Dim("  ·  ") + u.modelLabel() + u.st.Dim("  ·  "+shortPath(u.cwd(), u.o.Env)),
		u.st.Dim("  /help for commands · enter sends (or steers a running turn) · ctrl-j or \\ for a newline · ctrl-c interrupts · ctrl-d exits"),
	}
	if u.app.Demo {
		first := "No API key is configured, so dsh is using its offline demo model (a scripted run, no network)."
		for _, k := range []string{"DEEPSEEK_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"} {
			if u.o.Env(k) != "" {
				first = "dsh is using its offline demo model (a scripted run, no network)."
			}
		}
		lines = append(lines, "", u.st.Warn(first),
			u.st.Warn("To use a real model, set DEEPSEEK_API_KEY, ANTHROPIC_API_KEY or OPENAI_API_KEY, or pick one with --model provider/model."))
	}
	u.tr.Note(strings.Join(lines, "\n"))
}

func (u *ui) modelLabel() string {
	if u.isDemo() {
		return u.st.Demo(" DEMO ") + " " + u.st.Warn("offline demo model")
	}
	return u.st.Bold(u.modelName())
}

func shortPath(p string, env func(string) string) string {
	if h := env("HOME"); h != "" && (p == h || strings.HasPrefix(p, h+string(os.PathSeparator))) {
		return "~" + p[len(h):]
	}
	return p
}

// draw prints committed output and redraws the live region.
func (u *ui) draw() {
	if u.suspended {
		return // the shell owns the screen
	}
	u.lastDraw = time.Now()
	if u.view != nil {
		// Committed output waits in the transcript until the view closes.
		_, _ = io.WriteString(u.out, u.viewFrame())
		return
	}
	live, crow, ccol, w := renderFor(u.width, u.liveRows)
	frame := u.scr.Frame(u.tr.Take(), live, crow, ccol, w, u.height())
	_, _ = io.WriteString(u.out, frame)
}

// renderFor renders the live region for the terminal's width and renders
// it again while the width changed during the render. A frame rendered
// for the old width but read by the terminal after its reflow climbs too
// few of the reflowed lines and leaves the region's top behind as a stale
// copy; rendering an approval card takes long enough under load (a few
// milliseconds, more with -race) that a resize landed in that gap on a
// busy CI machine (TestResizeIsCleanInTmux). What remains is the moment
// between the last width query and the terminal reading the bytes, which
// no program can close.
func renderFor(width func() int, render func(w int) ([]string, int, int)) (live []string, crow, ccol, w int) {
	w = width()
	for tries := 1; ; tries++ {
		live, crow, ccol = render(w)
		now := width()
		if now == w || tries == 4 { // a window still being dragged: the next frame follows
			return live, crow, ccol, w
		}
		w = now
	}
}

// liveRows is the live region: in-progress transcript, queued steering,
// the spinner, the input (or the approval question) and the status line.
func (u *ui) liveRows(w int) (rows []string, crow, ccol int) {
	now := time.Now()
	frame := spinner[u.frame%len(spinner)]
	h := u.height()
	if tl := u.tr.Live(w, now.UnixMilli(), frame, max(3, h-10)); len(tl) > 0 {
		if u.tr.wrote {
			rows = append(rows, "")
		}
		rows = append(rows, tl...)
	}
	for _, p := range u.pending {
		rows = append(rows, ansi.Truncate(u.st.Dim("↳ queued: "+firstLine(sanitize(p))), w, "…"))
	}
	if u.busy() {
		el := ""
		if !u.busySince.IsZero() {
			el = " " + fmtDur(now.Sub(u.busySince).Milliseconds())
		}
		line := u.st.Accent(frame) + " " + u.activity() + u.st.Dim(el)
		rows = append(rows, ansi.Truncate(line, w, "…"))
	}
	rows = append(rows, "")
	if len(u.approvals) > 0 {
		q, qr, qc := u.approvalRows(w, now)
		crow, ccol = -1, 0
		if qr >= 0 {
			crow, ccol = len(rows)+qr, qc
		}
		rows = append(rows, q...)
		if u.reasonEd == nil && u.ed.Text() != "" {
			// The message being typed stays visible while the question
			// waits for it.
			in, r, c := u.ed.Layout(u.st.Accent("› "), "  ", w)
			crow, ccol = len(rows)+r, c
			rows = append(rows, in...)
		}
	} else if u.rw != nil {
		rows = append(rows, u.rewindRows(w)...)
		crow = -1
	} else if u.sp != nil {
		rows = append(rows, u.pickerRows(w)...)
		crow = -1
	} else if u.bypassAsk {
		for _, l := range wrapLines("Switch to bypassPermissions? Every tool call will run without asking, edits and commands included.", w-4) {
			rows = append(rows, u.st.Err("⚠ ")+u.st.Warn(l))
		}
		rows = append(rows, "  "+u.st.Key("[y]")+" switch to bypassPermissions   "+u.st.Dim("any other key: back to default mode"))
		crow = -1
	} else {
		in, r, c := u.ed.Layout(u.st.Accent("› "), "  ", w)
		crow, ccol = len(rows)+r, c
		rows = append(rows, in...)
		rows = append(rows, u.mentionRows(w)...)
	}
	rows = append(rows, u.statusLine(w))
	return rows, crow, ccol
}

func (u *ui) activity() string {
	switch {
	case len(u.approvals) > 0:
		return u.st.Warn("Waiting for your approval…")
	case u.tr.reasoning.Len() > 0 && u.tr.text.Len() == 0:
		return "Thinking…"
	case len(u.tr.cards) > 0:
		return "Running " + u.tr.cards[0].Name + "…"
	case u.tr.text.Len() > 0:
		return "Writing…"
	}
	return "Working…"
}

// approvalRows draws the open question; the cursor is placed only while a
// denial reason is typed.
func (u *ui) approvalRows(w int, now time.Time) (rows []string, crow, ccol int) {
	a := u.approvals[0]
	req := a.req
	if isPlan(req) {
		return u.planRows(req, w, now)
	}
	card := &Card{Name: req.Call.Name, Args: req.Call.Raw, Kind: req.Info.Kind}
	var view *tool.View
	if tl, ok := u.app.Host.Tools.Get(req.Call.Name); ok {
		if p, ok := tl.(tool.CallPresenter); ok && req.Call.Args != nil {
			view = sanitizeView(safeView(func() *tool.View { return p.PresentCall(req.Call.Args) }))
		}
	}
	card.Call = view
	rows = append(rows, ansi.Truncate(u.st.Warn("? ")+u.st.Bold("Allow ")+cardTitle(card, u.st)+u.st.Bold("?"), w, "…"))
	if req.Reason != "" {
		rs := wrapLines(strings.TrimSpace(sanitize(req.Reason)), w-2)
		if len(rs) > 3 {
			rs = append(rs[:2], ansi.Truncate(strings.Join(rs[2:], " "), w-2, "…"))
		}
		for _, r := range rs {
			rows = append(rows, u.st.Dim("  "+r))
		}
	}
	// The preview gets what the screen can spare: the question and its
	// choices must stay visible.
	limit := max(4, u.height()-12)
	var preview []string
	switch {
	case view != nil && len(view.Diffs) > 0:
		var ls []diffLine
		for _, d := range view.Diffs {
			ls = append(ls, fileDiffLines(d)...)
		}
		preview = renderDiff(ls, min(limit, diffLimit), u.st)
	case view != nil && view.Command != "":
		preview = u.commandRows(view.Command, w-6, limit)
	case view != nil && view.Text != "":
		preview = headLines(u.md.Render(view.Text, w-4), limit, func(s string) string { return s }, u.st)
	default:
		preview = []string{u.st.Dim(compactArgs(req.Call.Raw))}
	}
	rows = boxed(rows, preview, w)
	if u.reasonEd != nil {
		return u.reasonRows(rows, "  Why not? ", "(sent to the model; enter to skip) ", w)
	}
	k := u.st.Key
	switch wait := u.answerWait(now); {
	case wait != "":
		rows = append(rows, wait)
	case len(req.Suggestions) > 0:
		// The rule is shown before it is chosen: it is what [a] and [p]
		// would allow from now on.
		for i, l := range wrapLines(sanitize(strings.Join(req.Suggestions, ", ")), w-8) {
			lead := u.st.Dim("  rule: ")
			if i > 0 {
				lead = "        "
			}
			rows = append(rows, lead+l)
		}
		choices := "  " + k("[y]") + " allow once   " + k("[a]") + " allow for this session   "
		if u.app.Permission != nil {
			choices += k("[p]") + " always in this project   "
		}
		rows = append(rows, ansi.Truncate(choices+k("[n]")+" deny   "+u.st.Dim("(esc denies)"), w, "…"))
	default:
		// No rule can cover calls like this one (an ask rule, a command
		// that cannot be analysed, a hook's question): nothing to remember.
		rows = append(rows, ansi.Truncate("  "+k("[y]")+" allow once   "+k("[n]")+" deny   "+u.st.Dim("(esc denies)"), w, "…"))
	}
	if more := len(u.approvals) - 1; more > 0 {
		rows = append(rows, u.st.Dim(fmt.Sprintf("  (%d more waiting)", more)))
	}
	return rows, -1, 0
}

// commandRows shows a command in full, wrapped (control characters were
// made visible by sanitizeView); one taller than limit rows shows a
// window of it that ↑ and ↓ move, and says where it is.
func (u *ui) commandRows(cmd string, w, limit int) []string {
	var ls []string
	for i, l := range strings.Split(cmd, "\n") {
		for j, p := range wrapLines(l, w) {
			switch {
			case i == 0 && j == 0:
				p = "$ " + p
			case j == 0:
				p = "  " + p
			default:
				p = u.st.Dim("↪ ") + p
			}
			ls = append(ls, p)
		}
	}
	if len(ls) <= limit {
		return ls
	}
	room := max(1, limit-1)
	u.apScroll = min(u.apScroll, len(ls)-room)
	out := slices.Clone(ls[u.apScroll : u.apScroll+room])
	return append(out, u.st.Dim(fmt.Sprintf("lines %d–%d of %d · ↑/↓ scroll", u.apScroll+1, u.apScroll+room, len(ls))))
}

// shutdown leaves the terminal tidy: answers open questions, disposes the
// agent and prints how to resume.
func (u *ui) shutdown() {
	close(u.done)
	if u.view != nil {
		u.closeView()
	}
	for _, a := range u.approvals {
		select {
		case a.reply <- tool.Approval{Allow: false, Reason: "the user left", By: "user"}:
		default:
		}
	}
	u.approvals, u.reasonEd = nil, nil
	c := u.cur.Swap(nil)
	if c != nil && c.ag.Status() == agent.Running {
		c.ag.Cancel("the user exited")
	}
	// Flush what is committed, then replace the live region with a goodbye.
	_, _ = io.WriteString(u.out, u.scr.Frame(u.tr.Take(), nil, -1, 0, u.width(), u.height()))
	_, _ = io.WriteString(u.out, u.scr.Clear())
	if c != nil {
		// The user quitting from the prompt (/exit, ctrl-d) is Claude Code's
		// prompt_input_exit; anything else (a signal, the terminal closing)
		// is "other".
		reason := hooks.EndOther
		if u.quit {
			reason = hooks.EndPromptInputExit
		}
		u.app.SetEndReason(c.ag.ID(), reason)
		dctx, cancel := context.WithTimeout(context.WithoutCancel(u.ctx), 10*time.Second)
		_ = c.h.Dispose(dctx)
		cancel()
		if c.sess.Len() > 0 {
			msg := fmt.Sprintf("Session saved. Resume it with: dsh --resume %s", c.sess.ID())
			_, _ = io.WriteString(u.out, "\r\n"+u.st.Dim(msg)+"\r\n")
		}
	}
}

// complete finishes a slash command name on tab: dsh's commands and the
// custom ones, with descriptions.
func (u *ui) complete() {
	t := u.ed.Text()
	if !strings.HasPrefix(t, "/") || strings.ContainsAny(t, " \n") {
		return
	}
	type match struct{ name, hint, desc string }
	var ms []match
	seen := map[string]bool{}
	for _, c := range commands {
		if strings.HasPrefix("/"+c.name, t) {
			ms = append(ms, match{c.name, c.args, c.help})
			seen[c.name] = true
		}
	}
	set := u.customs()
	for _, c := range set.All() {
		if seen[c.Name] {
			continue
		}
		switch short := c.Name[strings.LastIndexByte(c.Name, ':')+1:]; {
		case strings.HasPrefix("/"+c.Name, t):
			ms = append(ms, match{c.Name, c.ArgumentHint, c.Summary()})
		case short != c.Name && strings.HasPrefix("/"+short, t):
			// /ship reaches /release:ship while no other command is ship.
			if found, ok := set.Lookup(short); ok && found == c {
				ms = append(ms, match{short, c.ArgumentHint, c.Summary() + " (/" + c.Name + ")"})
			}
		}
	}
	switch len(ms) {
	case 0:
	case 1:
		u.ed.SetText("/" + ms[0].name + " ")
		hint := ms[0].desc
		if ms[0].hint != "" {
			hint = ms[0].hint + " · " + hint
		}
		u.setHint(sanitize(hint), 5*time.Second)
	default:
		// Complete as far as the names agree, and list them.
		common := ms[0].name
		for _, m := range ms[1:] {
			for !strings.HasPrefix(m.name, common) {
				common = common[:len(common)-1]
			}
		}
		if len("/"+common) > len(t) {
			u.ed.SetText("/" + common)
		}
		var b strings.Builder
		for _, m := range ms {
			left := "/" + m.name
			if m.hint != "" {
				left += " " + m.hint
			}
			fmt.Fprintf(&b, "  %s%s %s\n", u.st.Accent(sanitize(left)), strings.Repeat(" ", max(1, 30-len(left))), u.st.Dim(sanitize(m.desc)))
		}
		u.tr.Note(strings.TrimRight(b.String(), "\n"))
	}
}
