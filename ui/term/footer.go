package term

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/dshq/dsh/permission"
)

// The footer is the status line under the prompt. It is built from
// pieces, each owned by the part of the UI that knows its figure, so
// features add a piece rather than rewrite the line:
//
//   - with the prompt's vim mode on, its mode (-- INSERT --, -- NORMAL --)
//     comes first, since it decides what a letter does;
//   - the permission mode comes next and is always there, whatever the
//     state (a question open, a turn running, the transcript view), since
//     it decides what runs without asking;
//   - then the state's own text: the keys of an open question or of a
//     running turn (with the context used and the cost), or, when idle,
//     the session pieces (model, context used, cost — or tokens for a
//     model without a price —, sandbox, directory);
//   - a hint (a short-lived message) replaces the state's text, not the
//     mode.
//
// The line is cut at the terminal's width from the right, so the pieces
// that must stay visible come first.

// statusLine is the footer, at most w columns wide.
func (u *ui) statusLine(w int) string {
	pieces := []string{u.vimPiece(), u.modePiece()}
	switch {
	case u.hint != "":
		pieces = append(pieces, u.st.Warn(u.hint))
	default:
		pieces = append(pieces, u.statePieces()...)
	}
	var kept []string
	for _, p := range pieces {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return ansi.Truncate("  "+strings.Join(kept, u.st.Dim(" · ")), w, "…")
}

// statePieces are the footer's pieces after the mode: what the keys do
// now, or the session's figures when nothing is going on.
func (u *ui) statePieces() []string {
	switch {
	case u.reasonEd != nil:
		return []string{u.st.Dim("enter sends the reason (or denies without one) · esc denies")}
	case len(u.approvals) > 0 && u.ed.Text() != "":
		return []string{u.st.Dim("keys go to your message: enter sends it, ctrl-u clears it; then answer · esc denies")}
	case len(u.approvals) > 0:
		return []string{u.st.Dim("answer with the key in [ ] (once the choices show) · esc denies · ctrl-c denies and interrupts")}
	case u.busy():
		return []string{u.st.Dim("esc or ctrl-c to interrupt · enter to steer"), u.contextPiece(), u.costPiece()}
	}
	spent := u.costPiece()
	if spent == "" {
		spent = u.tokensPiece() // a model without a price: its tokens
	}
	return []string{u.modelLabel(), u.contextPiece(), spent, u.sandboxPiece(), u.st.Dim(shortPath(u.cwd(), u.o.Env)), u.st.Dim("/help")}
}

// vimPiece names the prompt editor's vim mode when it is on, as vim
// shows it; it comes first because it decides what a letter does. The
// attached terminal shows it the same way.
func (u *ui) vimPiece() string { return vimPiece(u.st, u.ed.VimMode()) }

func vimPiece(st Styles, mode string) string {
	switch mode {
	case "NORMAL":
		return st.Accent("-- NORMAL --")
	case "INSERT":
		return st.Dim("-- INSERT --")
	}
	return ""
}

// modePiece names the permission mode; shift-tab cycles it.
func (u *ui) modePiece() string {
	m := permission.Mode(u.mode())
	switch m {
	case "":
		return ""
	case permission.ModeDefault:
		return u.st.Dim("default mode (shift-tab)")
	case permission.ModeAcceptEdits:
		return u.st.Warn("⏵⏵ accept edits") + u.st.Dim(" (shift-tab)")
	case permission.ModePlan:
		return u.st.Accent("⏸ plan mode") + u.st.Dim(" (shift-tab)")
	case permission.ModeBypass:
		return u.st.Err("⚠ bypass permissions") + u.st.Dim(" (shift-tab)")
	}
	return u.st.Warn(string(m))
}

// contextPiece is how much of the model's context window the conversation
// uses: what the last request sent plus what the model answered (or, after
// a compaction, its estimate), as a percentage of the window.
func (u *ui) contextPiece() string {
	used := u.tr.ContextUsed()
	window := u.contextWindow()
	if used <= 0 || window <= 0 {
		return ""
	}
	pct := used * 100 / window
	text := fmt.Sprintf("context %d%%", pct)
	if pct == 0 {
		text = "context <1%"
	}
	switch {
	case pct >= 90:
		return u.st.Err(text + " (/compact)")
	case pct >= 70:
		return u.st.Warn(text)
	}
	return u.st.Dim(text)
}

// contextWindow is the current model's window in tokens (the compactor's,
// which honours its configured override), 0 when unknown.
func (u *ui) contextWindow() int {
	if u.app.Compactor != nil {
		return u.app.Compactor.Window(u.modelName())
	}
	if info, ok := u.app.Host.LLM.Info(u.modelName()); ok {
		return info.ContextWindow
	}
	return 0
}

// tokensPiece is the session's token totals.
func (u *ui) tokensPiece() string {
	if u.tr.Turns == 0 {
		return ""
	}
	t := u.tr.Total
	return u.st.Dim(fmt.Sprintf("%s in · %s out", fmtTokens(t.InputTokens+t.CacheReadTokens+t.CacheWriteTokens), fmtTokens(t.OutputTokens)))
}
