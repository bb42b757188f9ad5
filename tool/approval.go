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
