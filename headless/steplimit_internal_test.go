package headless

import (
	"testing"

	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/session"
)

// The step limit (the turn's end reason max-steps) keeps Claude Code's
// names where scripts read them: exit code 6 and max_turns.
func TestStepLimitOutcome(t *testing.T) {
	if got := exitCode(session.EndMaxSteps, ""); got != app.ExitMaxSteps || app.ExitMaxSteps != 6 {
		t.Errorf("exit %d", got)
	}
	if got := terminalReason(session.EndReason{Kind: session.EndMaxSteps}); got != "max_turns" {
		t.Errorf("terminal reason %q", got)
	}
}
