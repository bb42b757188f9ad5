package permission

import (
	"fmt"
	"strings"
)

// Mode is a permission mode, named as Claude Code users know them.
type Mode string

// Modes.
const (
	// ModeDefault runs read-only tools and reads inside the workspace; edits
	// and commands ask unless a rule allows them.
	ModeDefault Mode = "default"
	// ModeAcceptEdits also runs file edits inside the workspace (shell
	// redirections included) without asking.
	ModeAcceptEdits Mode = "acceptEdits"
	// ModePlan forbids edits and state-changing commands; the model
	// researches and ends by presenting a plan with exit_plan_mode.
	ModePlan Mode = "plan"
	// ModeBypass runs everything that no deny or ask rule stops. Only the
	// user can choose it: never a project's settings.
	ModeBypass Mode = "bypassPermissions"
)

// Modes lists the modes in the order front-ends cycle through them.
var Modes = []Mode{ModeDefault, ModeAcceptEdits, ModePlan, ModeBypass}

// ParseMode validates a mode name ("" is the default mode).
func ParseMode(s string) (Mode, error) {
	if s == "" {
		return ModeDefault, nil
	}
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	names := make([]string, len(Modes))
	for i, m := range Modes {
		names[i] = string(m)
	}
	return "", fmt.Errorf("permission: unknown mode %q (want one of %s)", s, strings.Join(names, ", "))
}

// ModeNames lists the modes for messages: "default, acceptEdits, plan,
// bypassPermissions".
func ModeNames() string {
	names := make([]string, len(Modes))
	for i, m := range Modes {
		names[i] = string(m)
	}
	return strings.Join(names, ", ")
}

// ModeChange notifies a mode switch (SetMode or an approved plan).
type ModeChange struct {
	// Session is the session whose own mode changed; "" for the checker's
	// mode, which every session without one of its own follows.
	Session  string
	From, To Mode
	// By says who switched: "user" (SetMode, SetSessionMode) or
	// "exit_plan_mode".
	By string
}
