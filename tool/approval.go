package tool

import "context"

// ApprovalRequest is an ask decision put to whoever can answer it: the
// terminal user, an editor over ACP, or a headless policy.
type ApprovalRequest struct {
	Call   Call
	Info   Info
	Reason string
}

// Approval answers a request. Remember asks the permission layer to allow
// the same kind of call for the rest of the session; Reason (on a denial) is
// what the model reads.
type Approval struct {
	Allow    bool
	Remember bool
	Reason   string
	By       string
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
