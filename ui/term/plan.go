package term

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/dshq/dsh/permission"
	"github.com/dshq/dsh/tool"
)

// The plan card is the question exit_plan_mode asks: the plan itself, and
// what to do with it. Approving it picks the mode the work then runs in
// (approving a plan must not quietly grant edits); bypassPermissions is
// offered only when settings allow it, and asks once more. Keeping on
// planning and rejecting with feedback both leave plan mode on; what the
// model reads says which it was.

// isPlan reports whether a question is exit_plan_mode's.
func isPlan(req tool.ApprovalRequest) bool {
	return req.Call.Name == permission.ExitPlanTool || req.Call.Name == "ExitPlanMode"
}

// keepPlanning is what the model reads when the user wants more planning.
const keepPlanning = "not yet: keep planning. Plan mode stays on; keep researching and refining the plan, and present it again with " + permission.ExitPlanTool + " when it is ready"

// planRejected is what the model reads for a plan rejected with feedback.
func planRejected(feedback string) string {
	if feedback == "" {
		return "the plan is rejected. Plan mode stays on; ask the user what to change"
	}
	return "the plan is rejected. Plan mode stays on; revise the plan with this feedback and present it again: " + feedback
}

// planRows draws the plan card.
func (u *ui) planRows(req tool.ApprovalRequest, w int, now time.Time) (rows []string, crow, ccol int) {
	rows = append(rows, ansi.Truncate(u.st.Warn("? ")+u.st.Bold("Plan ready: approve it and leave plan mode?"), w, "…"))
	var a struct {
		Plan string `json:"plan"`
	}
	_ = json.Unmarshal(req.Call.Args, &a)
	text := strings.TrimSpace(sanitize(a.Plan))
	if text == "" {
		text = u.st.Dim("(the model sent no plan text)")
	}
	rows = boxed(rows, headLines(u.md.Render(text, w-4), max(4, u.height()-14), func(s string) string { return s }, u.st), w)
	if u.reasonEd != nil {
		return u.reasonRows(rows, "  What should change? ", "(sent to the model) ", w)
	}
	k := u.st.Key
	switch wait := u.answerWait(now); {
	case wait != "":
		rows = append(rows, wait)
	case u.planBypass:
		for _, l := range wrapLines("Approve into bypassPermissions? Every tool call will run without asking, edits and commands included.", w-4) {
			rows = append(rows, u.st.Err("⚠ ")+u.st.Warn(l))
		}
		rows = append(rows, "  "+k("[y]")+" approve into bypassPermissions   "+u.st.Dim("any other key: back to the choices"))
	default:
		rows = append(rows, "  "+k("[y]")+" approve, default mode (edits and commands ask)")
		rows = append(rows, "  "+k("[e]")+" approve, accept edits")
		if u.app.Permission != nil && u.app.Permission.BypassDisabled() == "" {
			rows = append(rows, "  "+k("[b]")+" approve, bypass permissions "+u.st.Dim("(asks to confirm)"))
		}
		rows = append(rows, "  "+k("[k]")+" keep planning   "+k("[n]")+" reject with feedback   "+u.st.Dim("(esc keeps planning)"))
	}
	return rows, -1, 0
}

// planKey answers the plan card. Approving switches the mode first, so
// exit_plan_mode finds plan mode already left and tells the model the mode
// the user chose.
func (u *ui) planKey(a *approval, k Key) {
	r := rune(0)
	if k.Kind == KeyRune {
		r = k.Rune | 0x20 // lower case for letters
	}
	approve := func(m permission.Mode) {
		if u.app.Permission != nil {
			if err := u.app.Permission.SetMode(m); err != nil {
				u.setHint(err.Error(), 3*time.Second)
				return
			}
		}
		u.answer(a, tool.Approval{Allow: true, By: "user"})
	}
	if u.planBypass {
		u.planBypass = false
		if r == 'y' {
			approve(permission.ModeBypass)
		}
		return
	}
	switch {
	case r == 'y':
		approve(permission.ModeDefault)
	case r == 'e':
		approve(permission.ModeAcceptEdits)
	case r == 'b' && u.app.Permission != nil && u.app.Permission.BypassDisabled() == "":
		u.planBypass = true
	case r == 'k' || k.Kind == KeyEsc:
		u.answer(a, tool.Approval{Allow: false, Reason: keepPlanning, By: "user"})
	case r == 'n':
		u.reasonEd = NewEditor(nil)
	case k.Kind == KeyCtrlC:
		u.answer(a, tool.Approval{Allow: false, Reason: "the user interrupted the turn", By: "user"})
		u.interrupt()
	}
}

// boxed appends a card's preview under its title, each line behind the
// card's bar and cut at the pane's width so the card's height is known.
func boxed(rows, preview []string, w int) []string {
	for _, l := range preview {
		rows = append(rows, ansi.Truncate("  │ "+l, w, "…"))
	}
	return rows
}

// reasonRows ends a card with the editor for the user's reason; the row and
// column it returns place the cursor in that editor.
func (u *ui) reasonRows(rows []string, label, hint string, w int) ([]string, int, int) {
	in, r, c := u.reasonEd.Layout(u.st.Warn(label)+u.st.Dim(hint)+u.st.Accent("› "), "  ", w)
	return append(rows, in...), len(rows) + r, c
}

// answerWait is the note shown instead of a card's answer keys while a key
// would not be taken as an answer: the user is typing a message, or the
// card has only just appeared (a key already on its way must not answer
// it). Empty when the keys are live.
func (u *ui) answerWait(now time.Time) string {
	switch {
	case u.ed.Text() != "":
		return u.st.Dim("  (answer keys wait until your message is sent or cleared)")
	case !u.answerReady(now):
		return u.st.Dim("  (answer keys in a moment…)")
	}
	return ""
}
