package term

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

// Shell mode: a line starting with ! runs in the user's shell through the
// agent's own bash tool, so the permission layer's deny rules, hooks and the
// sandbox apply exactly as to the model's commands; only the question is
// skipped, since the user typed the command. Its output joins the
// conversation as context (not a prompt: the model does not answer it) so
// the next message can refer to it.

// The tags around a ! command's line and output in the context it adds;
// the transcript renders that context as the command and its output (live
// and on resume).
const (
	shellInputTag  = "<bash-input>"
	shellOutputTag = "<bash-output>"
)

// shellDone is a ! command's outcome, back on the UI goroutine.
type shellDone struct {
	cur  *current
	line string
	out  tool.Outcome
	err  error
}

// typedApprover answers yes: the command is the user's own.
type typedApprover struct{}

func (typedApprover) Approve(context.Context, tool.ApprovalRequest) (tool.Approval, error) {
	return tool.Approval{Allow: true, By: "user", Reason: "typed by the user with !"}, nil
}

func (u *ui) shell(line string) {
	c := u.cur.Load()
	if c == nil {
		u.tr.Note(u.st.Err("no agent is running (try /clear)"))
		return
	}
	host, ok := c.ag.(tool.Host)
	if !ok {
		u.tr.Note(u.st.Err("this agent cannot run commands"))
		return
	}
	u.shells++
	u.shellN++
	u.setHint("running ! "+firstLine(sanitize(line))+"…", time.Hour)
	id := llm.CallID(fmt.Sprintf("user-shell-%d-%d", time.Now().UnixNano(), u.shellN))
	reg := u.app.Host.Tools
	go func() {
		b, _ := json.Marshal(map[string]string{"command": line, "description": "! typed by the user"})
		out := reg.Execute(u.ctx, tool.Call{ID: id, Name: "bash", Args: b, Raw: string(b), Host: host}, tool.ExecOptions{Approver: typedApprover{}})
		u.q.push(shellDone{cur: c, line: line, out: out})
	}()
}

func (u *ui) shellFinished(m shellDone) {
	u.shells--
	if u.shells == 0 {
		u.setHint("", 0)
	}
	out := m.out
	switch {
	case out.Decision.Kind == tool.Deny:
		u.tr.Note(u.st.Err("! " + sanitize(m.line) + " — not run: " + sanitize(out.Decision.Reason)))
		return
	case out.Approval != nil && !out.Approval.Allow:
		u.tr.Note(u.st.Err("! " + sanitize(m.line) + " — not run: " + sanitize(out.Approval.Reason)))
		return
	}
	if m.cur != u.cur.Load() {
		u.tr.Note(u.st.Warn("! " + sanitize(m.line) + " finished after the session changed; its output is not added"))
		return
	}
	text := strings.TrimRight(llm.TextOf(out.Result.Content), "\n")
	ctxText := "The user ran this command in the terminal with `!` (it is context for the conversation; do not run it again unless asked):\n" +
		shellInputTag + m.line + "</bash-input>\n" + shellOutputTag + text + "</bash-output>"
	err := m.cur.ag.Inject(u.ctx, []llm.Block{llm.Text(ctxText)}, llm.Source{Kind: llm.SourceUser, Command: "!" + m.line})
	if err != nil {
		u.tr.Note(u.st.Err("! " + sanitize(m.line) + ": its output could not be added: " + sanitize(err.Error())))
	}
}

// shellLines is how many output lines a ! command shows in the transcript.
const shellLines = 12

// shellContext renders a ! command's context message: the line as typed,
// then the head of its output.
func (t *Transcript) shellContext(p session.Prompt) bool {
	cmd, ok := strings.CutPrefix(p.Source.Command, "!")
	if !ok || p.Source.OrUser().Kind != llm.SourceUser {
		return false
	}
	text := llm.TextOf(p.Content)
	_, rest, _ := strings.Cut(text, shellOutputTag)
	rest = strings.TrimSuffix(rest, "</bash-output>")
	var b strings.Builder
	b.WriteString(t.st.User("! ") + sanitize(cmd))
	lines := strings.Split(sanitize(rest), "\n")
	if rest == "" {
		lines = []string{"(no output)"}
	}
	for i, l := range lines {
		if i == shellLines {
			b.WriteString("\n" + t.st.Dim(fmt.Sprintf("    … +%d %s", len(lines)-i, plural(len(lines)-i, "line", "lines"))))
			break
		}
		lead := "    "
		if i == 0 {
			lead = "  ⎿ "
		}
		b.WriteString("\n" + t.st.Dim(lead) + l)
	}
	t.block(b.String())
	return true
}
