package loop

import (
	"testing"

	"github.com/dshq/dsh/session"
)

// endReason is the one decision of how a turn ends; its precedence is the
// documented one: an unsaved log, disposal, cancellation, failure, then the
// quiet endings.
func TestEndReasonPrecedence(t *testing.T) {
	failure := &session.EndReason{Kind: session.EndError, Step: 2, Message: "boom", Code: "X"}
	notSaved := &session.EndReason{Kind: session.EndError, Step: 1, Message: "disk full", Code: session.CodeNotSaved}
	for _, c := range []struct {
		name string
		f    stopFacts
		want session.EndReason
	}{
		{"nothing happened", stopFacts{}, session.EndReason{Kind: session.EndCompleted}},
		{"max tokens", stopFacts{maxTokens: true}, session.EndReason{Kind: session.EndMaxTokens}},
		{"step limit beats max tokens", stopFacts{maxSteps: true, maxTokens: true}, session.EndReason{Kind: session.EndMaxSteps}},
		{"rejected", stopFacts{rejected: true, rejectReason: "no"}, session.EndReason{Kind: session.EndRejected, Reason: "no"}},
		{"failure beats quiet endings", stopFacts{failure: failure, maxSteps: true, maxTokens: true}, *failure},
		{"cancel beats failure", stopFacts{aborted: true, abortReason: "esc", failure: failure}, session.EndReason{Kind: session.EndAborted, Reason: "esc"}},
		{"disposal beats cancel and failure", stopFacts{disposed: true, aborted: true, failure: failure, maxTokens: true}, session.EndReason{Kind: session.EndDisposed}},
		{"an unsaved log beats everything", stopFacts{disposed: true, aborted: true, failure: notSaved}, *notSaved},
	} {
		if got := c.f.endReason(); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
