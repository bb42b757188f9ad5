package tool

import (
	"context"
	"slices"
	"strings"

	"github.com/dshq/dsh/fs"
)

// ApprovalRequest is an ask decision put to whoever can answer it: the
// terminal user, an editor over ACP, or a headless policy.
type ApprovalRequest struct {
	Call   Call
	Info   Info
	Reason string
	// Suggestions are the permission rules that would let calls like this
	// one run without asking ("Bash(git diff:*)"): what an approver offers
	// as "allow for this session". Empty when no rule can (an ask rule, a
	// command that cannot be analysed, a hook's question).
	Suggestions []string
}

// Approval answers a request. Reason (on a denial) is what the model
// reads; By names who answered.
//
// Rules are the permission rules the user accepted with this answer, for
// the rest of the session: on an allow, rules that allow (normally the
// request's Suggestions: "allow for this session"); on a denial, rules
// that deny (an editor's "always reject": the tool's name). The permission
// layer records them in the session's log as session rules, so they hold
// for later calls and after the session is resumed, in any process.
type Approval struct {
	Allow  bool
	Rules  []string
	Reason string
	By     string
}

// Scope is how long the answer holds: "session" when it carries rules,
// else "once". It is what the approval/answer event records.
func (a Approval) Scope() string {
	if len(a.Rules) > 0 {
		return "session"
	}
	return "once"
}

// Answerers that are not a person: no approver was attached, or the
// approver failed.
const (
	ByNone  = "none"
	ByError = "error"
)

// Denied reports whether a person answered a with a denial (the terminal
// user, an editor's user, an embedder's callback), as opposed to a denial
// because nobody could be asked or the asking failed.
func Denied(a Approval) bool { return !a.Allow && a.By != ByNone && a.By != ByError }

// DenialText is what the model reads for a call that was not approved. A
// person's denial is said as such, with their reason ("The user denied
// this tool call: not now"), so the model neither takes it for a failure
// of the tool nor retries it as one; a call nobody could approve reads as
// the error it is.
func DenialText(a Approval) string {
	if !Denied(a) {
		return "Error: " + a.Reason
	}
	if strings.TrimSpace(a.Reason) == "" {
		return "The user denied this tool call."
	}
	return "The user denied this tool call: " + a.Reason
}

// Approver is the approval seam. With none attached, ask decisions fail
// closed with a reason that says why.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (Approval, error)
}

// ApproverFunc adapts a function to [Approver].
type ApproverFunc func(ctx context.Context, req ApprovalRequest) (Approval, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, req ApprovalRequest) (Approval, error) {
	return f(ctx, req)
}

// ReadFilter says which files a call may show: the returned function
// reports whether path is withheld (nil: none is). The permission plugin
// provides one (its deny rules on reading) for the search tools, whose
// results would otherwise list files a read of them is refused.
type ReadFilter func(ctx context.Context, call Call) func(path string) bool

// FileConfirm confirms that the file a file tool is about to use is the
// one its call was allowed to use: key is the path the tool resolved just
// now (the file provider then opens it without following symbolic links),
// id the identity of the file opened, when known. An error refuses the
// call and is what the model reads. The permission plugin provides one,
// so a symbolic link moved between its decision and the tool's run, or a
// hard link to a denied file, cannot redirect the tool (see
// permission.Checker.ConfirmFile).
type FileConfirm func(ctx context.Context, call Call, key string, id fs.FileID) error

// askKey carries, on the context a tool runs with, the way to put a
// question about the running call to its agent's approver.
type askKey struct{}

type asker func(ctx context.Context, reason string, suggestions []string) Approval

// AskDuring puts a question about the running call to whoever approves
// its agent's calls (the terminal user, an editor over ACP) and returns
// the answer, recorded as one more approval exchange of the call (the
// approval/request and approval/answer events). It is for what a call
// turns out to need while it runs — a sandboxed command reaching a domain
// nobody allowed — where the decision made before the run could not ask.
// Without an approver (headless) the answer is a refusal that says so
// (By "none"). ok is false when ctx is not the context of a call the
// registry runs; the rules an answer accepts are the caller's to record.
func AskDuring(ctx context.Context, reason string, suggestions []string) (a Approval, ok bool) {
	f, _ := ctx.Value(askKey{}).(asker)
	if f == nil {
		return Approval{}, false
	}
	return f(ctx, reason, suggestions), true
}

// withAsk lets the tool running p ask its approver through AskDuring.
func (r *Registry) withAsk(ctx context.Context, p *Pending, opts ExecOptions) context.Context {
	return context.WithValue(ctx, askKey{}, asker(func(ctx context.Context, reason string, suggestions []string) Approval {
		q := *p
		q.Decision = Decision{Kind: Ask, Reason: reason, Suggestions: slices.Clone(suggestions), By: p.Decision.By}
		return r.approve(ctx, &q, opts)
	}))
}
