package term

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
	xterm "golang.org/x/term"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

// Remote is a session that runs somewhere else (a dsh serve): what the
// attached terminal reads and does.
type Remote interface {
	// Events yields the session's events from seq from on, live, until
	// ctx ends.
	Events(ctx context.Context, from int64) iter.Seq2[session.Event, error]
	// Send queues a message; Steer joins the running turn.
	Send(ctx context.Context, text string) error
	Steer(ctx context.Context, text string) error
	// Cancel cancels the running turn.
	Cancel(ctx context.Context, reason string) error
	// Answer answers a question the agent waits on.
	Answer(ctx context.Context, call llm.CallID, a tool.Approval) error
}

// AttachOptions configure [Attach].
type AttachOptions struct {
	In  io.Reader
	Out io.Writer
	// Remote is the session; ID, Cwd and Model describe it for the
	// banner and the status line.
	Remote Remote
	ID     session.ID
	Cwd    string
	Model  string
	// Width and Height report the terminal size (defaults: Out's size,
	// or 80×24).
	Width, Height func() int
	Env           func(string) string
	NoColor       bool
	Version       string
	// Vim turns the prompt editor's vim mode on ("editorMode": "vim" in
	// the user's settings), as in the local terminal.
	Vim bool
}

// Messages of the attached UI's goroutine.
type (
	remoteEvent struct{ ev session.Event }
	remoteEnd   struct{ err error }
	remoteDone  struct {
		what string
		err  error
	}
)

// question is an approval/request the attached terminal shows.
type question struct {
	req  session.ApprovalRequest
	call session.ToolCall
}

// attached is the terminal attached to a remote session: the transcript
// of its events (history first, then live), a line editor that sends or
// steers, and the agent's questions answered through the Remote. Like
// the local UI, everything touching the terminal runs on one goroutine.
type attached struct {
	o   AttachOptions
	st  Styles
	out io.Writer
	scr Screen
	q   *queue
	tr  *Transcript
	ed  *Editor
	dec Decoder
	ctx context.Context

	calls     map[llm.CallID]session.ToolCall
	questions []question
	reasonEd  *Editor
	hint      string
	hintUntil time.Time
	lastCtrlC time.Time
	frame     int
	err       error // why the stream ended
	quit      bool
	// jc suspends on ctrl-z (nil: not a terminal); nothing is drawn while
	// suspended, as in the local terminal ([ui.suspend]).
	jc        *jobControl
	suspended bool
}

// Attach shows a remote session in the terminal until the user detaches
// (ctrl-d, or ctrl-c twice while idle) or ctx ends; the session goes on
// running where it runs.
func Attach(ctx context.Context, o AttachOptions) error {
	if o.Remote == nil {
		return errors.New("term: no session to attach to")
	}
	plain := terminalDefaults(&o.In, &o.Out, &o.Env, &o.Width, &o.Height, o.NoColor)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a := &attached{o: o, st: NewStyles(plain), out: o.Out, q: newQueue(), ed: NewEditor(nil), ctx: ctx, calls: map[llm.CallID]session.ToolCall{}}
	a.scr.Sync = true
	noTools := func(string) (tool.Tool, bool) { return nil, false }
	a.tr = NewTranscript(a.st, newMarkdown(plain, o.Env), noTools, func() int { return a.width() })
	a.ed.SetVim(o.Vim)
	if f, ok := o.In.(*os.File); ok && xterm.IsTerminal(int(f.Fd())) {
		old, err := xterm.MakeRaw(int(f.Fd()))
		if err != nil {
			return fmt.Errorf("term: raw mode: %w", err)
		}
		defer func() { _ = xterm.Restore(int(f.Fd()), old) }()
		a.jc = newJobControl(f, old, func() { a.q.push(contMsg{}) })
		defer a.jc.stop()
	}
	stopResize := notifyResize(func() { a.q.push(resizeMsg{}) })
	defer stopResize()
	done := make(chan struct{})
	defer close(done)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := o.In.Read(buf)
			if n > 0 {
				a.q.push(inputMsg{b: append([]byte(nil), buf[:n]...)})
			}
			if err != nil && a.jc != nil && a.jc.backgroundRead(err) {
				// Stopped and continued in the background: wait for fg.
				select {
				case <-done:
					return
				case <-time.After(100 * time.Millisecond):
				}
				continue
			}
			if err != nil {
				a.q.push(inputEnd{err: err})
				return
			}
			select {
			case <-done:
				return
			default:
			}
		}
	}()
	go func() {
		for ev, err := range o.Remote.Events(ctx, 0) {
			if err != nil {
				a.q.push(remoteEnd{err: err})
				return
			}
			a.q.push(remoteEvent{ev: ev})
		}
	}()
	a.tr.Note(a.st.Bold("dsh "+o.Version) + a.st.Dim(" · attached to session "+string(o.ID)+" · "+shortPath(o.Cwd, o.Env)+" · "+o.Model))
	a.draw()
	a.loop()
	_, _ = io.WriteString(a.out, a.scr.Frame(a.tr.Take(), nil, -1, 0, a.width(), a.height()))
	fmt.Fprintf(a.out, "\r\nDetached; the session goes on in the server. Attach again: dsh remote attach %s\r\n", o.ID)
	if a.err != nil && !errors.Is(a.err, context.Canceled) {
		return a.err
	}
	return nil
}

func (a *attached) width() int  { return max(20, a.o.Width()) }
func (a *attached) height() int { return max(5, a.o.Height()) }

func (a *attached) loop() {
	tick := time.NewTicker(80 * time.Millisecond)
	defer tick.Stop()
	var escTimer <-chan time.Time
	for !a.quit {
		select {
		case <-a.ctx.Done():
			a.quit = true
		case <-a.q.ready:
			for _, m := range a.q.drain() {
				a.handle(m)
			}
		case <-tick.C:
			a.frame++
		case <-escTimer:
			escTimer = nil
			a.keys(a.dec.Flush())
		}
		if a.dec.Pending() && escTimer == nil {
			escTimer = time.After(40 * time.Millisecond)
		}
		if !a.quit {
			a.draw()
		}
	}
}

func (a *attached) handle(m any) {
	switch m := m.(type) {
	case remoteEvent:
		a.event(m.ev)
	case remoteEnd:
		a.err = m.err
		a.tr.Note(a.st.Err("the event stream ended: " + sanitize(oneLine(m.err.Error()))))
		a.quit = true
	case remoteDone:
		if m.err != nil {
			a.tr.Note(a.st.Err(m.what + ": " + sanitize(oneLine(m.err.Error()))))
		}
	case inputMsg:
		a.keys(a.dec.Feed(m.b))
	case inputEnd:
		a.keys(a.dec.Flush())
		a.quit = true
	case resizeMsg:
	case contMsg:
		a.continued()
	}
}

// event renders one event and follows the questions it opens and closes.
func (a *attached) event(ev session.Event) {
	a.tr.Apply(ev)
	switch ev.Type {
	case session.TypeToolCall:
		if c, err := session.Decode[session.ToolCall](ev); err == nil {
			a.calls[c.CallID] = c
		}
	case session.TypeApprovalRequest:
		if r, err := session.Decode[session.ApprovalRequest](ev); err == nil {
			a.questions = append(a.questions, question{req: r, call: a.calls[r.CallID]})
		}
	case session.TypeApprovalAnswer:
		if r, err := session.Decode[session.ApprovalAnswer](ev); err == nil {
			a.withdraw(r.CallID)
		}
	case session.TypeTurnEnd:
		// A question of an ended turn can no longer be answered.
		a.questions, a.reasonEd = nil, nil
		clear(a.calls)
	}
}

func (a *attached) withdraw(id llm.CallID) {
	i := slices.IndexFunc(a.questions, func(q question) bool { return q.req.CallID == id })
	if i < 0 {
		return
	}
	if i == 0 {
		a.reasonEd = nil
	}
	a.questions = slices.Delete(a.questions, i, i+1)
}

// do runs a request to the server off the UI goroutine.
func (a *attached) do(what string, f func(context.Context) error) {
	go func() {
		ctx, cancel := context.WithTimeout(a.ctx, 30*time.Second)
		defer cancel()
		a.q.push(remoteDone{what: what, err: f(ctx)})
	}()
}

func (a *attached) keys(ks []Key) {
	for _, k := range ks {
		if a.quit {
			return
		}
		if k.Kind == KeyCtrlZ {
			a.suspend() // an open question waits, as it was, for fg
			continue
		}
		if len(a.questions) > 0 && (a.reasonEd != nil || a.ed.Text() == "" || k.Kind == KeyEsc) {
			a.answerKey(k)
			continue
		}
		a.editorKey(k)
	}
}

// answerKey answers the open question: y (once), a (for the session, with
// the rules it offered), n (then a reason), esc (deny).
func (a *attached) answerKey(k Key) {
	q := a.questions[0]
	answer := func(ans tool.Approval) {
		id := q.req.CallID
		a.withdraw(id) // the answer's event confirms it
		a.do("answering "+q.req.Name, func(ctx context.Context) error { return a.o.Remote.Answer(ctx, id, ans) })
	}
	if a.reasonEd != nil {
		switch a.reasonEd.Handle(k) {
		case ActSubmit:
			answer(tool.Approval{Allow: false, Reason: strings.TrimSpace(a.reasonEd.Text()), By: "user"})
		case ActEsc, ActInterrupt, ActEOF:
			answer(tool.Approval{Allow: false, By: "user"})
		}
		return
	}
	switch {
	case k.Kind == KeyRune && (k.Rune == 'y' || k.Rune == 'Y'):
		answer(tool.Approval{Allow: true, By: "user"})
	case k.Kind == KeyRune && (k.Rune == 'a' || k.Rune == 'A') && len(q.req.Suggestions) > 0:
		answer(tool.Approval{Allow: true, Rules: slices.Clone(q.req.Suggestions), By: "user"})
	case k.Kind == KeyRune && (k.Rune == 'n' || k.Rune == 'N'):
		a.reasonEd = NewEditor(nil)
	case k.Kind == KeyEsc:
		answer(tool.Approval{Allow: false, By: "user"})
	case k.Kind == KeyCtrlC:
		answer(tool.Approval{Allow: false, Reason: "the user interrupted the turn", By: "user"})
		a.interrupt()
	case k.Kind == KeyCtrlD:
		a.quit = true
	}
}

func (a *attached) editorKey(k Key) {
	if k.Kind == KeyCtrlV {
		// The server's messages are text: an image cannot go with them.
		a.tr.Note(a.st.Warn("ctrl-v: images cannot be sent to a session attached over dsh serve (its messages are text); attach them in a local session"))
		return
	}
	switch a.ed.Handle(k) {
	case ActSubmit:
		text := a.ed.Expanded()
		if strings.TrimSpace(text) == "" {
			return
		}
		a.ed.Reset()
		if a.tr.Busy() {
			a.do("steering", func(ctx context.Context) error { return a.o.Remote.Steer(ctx, text) })
		} else {
			a.do("sending", func(ctx context.Context) error { return a.o.Remote.Send(ctx, text) })
		}
	case ActEOF:
		a.quit = true
	case ActInterrupt:
		switch {
		case a.tr.Busy():
			a.interrupt()
		case a.ed.Text() != "":
			a.ed.Reset()
		case time.Since(a.lastCtrlC) < 2*time.Second:
			a.quit = true
		default:
			a.lastCtrlC = time.Now()
			a.setHint("press ctrl-c again to detach (the session goes on)")
		}
	case ActEsc:
		if a.tr.Busy() {
			a.interrupt()
		}
	case ActRedraw:
		_, _ = io.WriteString(a.out, "\x1b[H\x1b[2J")
		a.scr.Reset()
	}
}

func (a *attached) interrupt() {
	a.setHint("interrupting…")
	a.do("cancelling the turn", func(ctx context.Context) error { return a.o.Remote.Cancel(ctx, "interrupted by user") })
}

func (a *attached) setHint(s string) { a.hint, a.hintUntil = s, time.Now().Add(2*time.Second) }

// suspend is ctrl-z: the committed output printed, the live region
// erased and the terminal handed back, then the process group stopped;
// [attached.continued] takes the terminal again. The session goes on in
// the server meanwhile, and its events wait in the queue.
func (a *attached) suspend() {
	switch {
	case a.suspended:
		return
	case a.jc == nil:
		a.setHint("ctrl-z: not a terminal, nothing to suspend")
		return
	case !a.jc.available():
		a.setHint("ctrl-z: the shell that started dsh has no job control")
		return
	}
	_, _ = io.WriteString(a.out, a.scr.Frame(a.tr.Take(), nil, -1, 0, a.width(), a.height()))
	_, _ = io.WriteString(a.out, a.scr.Clear())
	a.suspended = true
	if err := a.jc.suspend(a.out); err != nil {
		a.suspended = false
		_, _ = a.jc.resume(a.out)
		a.scr.Reset()
		a.setHint(err.Error())
	}
}

// continued answers SIGCONT as [ui.continued] does.
func (a *attached) continued() {
	if a.jc == nil {
		return
	}
	ok, err := a.jc.resume(a.out)
	if err != nil {
		a.setHint(err.Error())
	}
	switch {
	case !ok:
	case a.suspended:
		a.suspended = false
		a.scr.Reset()
	default:
		_, _ = io.WriteString(a.out, a.scr.Clear()) // a stop from elsewhere
	}
}

func (a *attached) draw() {
	if a.suspended {
		return // the shell owns the screen
	}
	live, crow, ccol, w := renderFor(a.width, a.liveRows)
	_, _ = io.WriteString(a.out, a.scr.Frame(a.tr.Take(), live, crow, ccol, w, a.height()))
}

func (a *attached) liveRows(w int) (rows []string, crow, ccol int) {
	frame := spinner[a.frame%len(spinner)]
	if tl := a.tr.Live(w, time.Now().UnixMilli(), frame, max(3, a.height()-10)); len(tl) > 0 {
		rows = append(rows, "")
		rows = append(rows, tl...)
	}
	if a.tr.Busy() {
		act := "Working…"
		if len(a.questions) > 0 {
			act = a.st.Warn("Waiting for an answer…")
		}
		rows = append(rows, a.st.Accent(frame)+" "+act)
	}
	rows = append(rows, "")
	crow = -1
	if len(a.questions) > 0 {
		qr, r, c := a.questionRows(w)
		if r >= 0 {
			crow, ccol = len(rows)+r, c
		}
		rows = append(rows, qr...)
	}
	if a.reasonEd == nil && (len(a.questions) == 0 || a.ed.Text() != "") {
		in, r, c := a.ed.Layout(a.st.Accent("› "), "  ", w)
		crow, ccol = len(rows)+r, c
		rows = append(rows, in...)
	}
	status := a.st.Dim("remote " + string(a.o.ID) + " · enter sends (steers while a turn runs) · ctrl-d detaches")
	if p := vimPiece(a.st, a.ed.VimMode()); p != "" {
		status = p + "  " + status
	}
	if a.hint != "" && time.Now().Before(a.hintUntil) {
		status = a.st.Warn(a.hint)
	}
	rows = append(rows, ansi.Truncate(status, w, "…"))
	return rows, crow, ccol
}

func (a *attached) questionRows(w int) (rows []string, crow, ccol int) {
	q := a.questions[0]
	card := &Card{Name: cmpOr(q.call.Name, q.req.Name), Args: q.call.Arguments}
	rows = append(rows, ansi.Truncate(a.st.Warn("? ")+a.st.Bold("Allow ")+cardTitle(card, a.st)+a.st.Bold("?"), w, "…"))
	if q.req.Reason != "" {
		for _, l := range wrapLines(strings.TrimSpace(sanitize(q.req.Reason)), w-2) {
			rows = append(rows, a.st.Dim("  "+l))
		}
	}
	if q.call.Arguments != "" {
		rows = append(rows, ansi.Truncate("  │ "+a.st.Dim(compactArgs(q.call.Arguments)), w, "…"))
	}
	if a.reasonEd != nil {
		in, r, c := a.reasonEd.Layout(a.st.Warn("  Why not? ")+a.st.Dim("(sent to the model; enter to skip) ")+a.st.Accent("› "), "  ", w)
		return append(rows, in...), len(rows) + r, c
	}
	k := a.st.Key
	choices := "  " + k("[y]") + " allow once   "
	if len(q.req.Suggestions) > 0 {
		rows = append(rows, ansi.Truncate(a.st.Dim("  rule: ")+sanitize(strings.Join(q.req.Suggestions, ", ")), w, "…"))
		choices += k("[a]") + " allow for this session   "
	}
	rows = append(rows, ansi.Truncate(choices+k("[n]")+" deny   "+a.st.Dim("(esc denies)"), w, "…"))
	if more := len(a.questions) - 1; more > 0 {
		rows = append(rows, a.st.Dim(fmt.Sprintf("  (%d more waiting)", more)))
	}
	return rows, -1, 0
}
