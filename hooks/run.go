package hooks

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/dshq/dsh/bash"
)

// Output is one hook's decoded answer.
type Output struct {
	ExitCode          *int
	Stdout, Stderr    string
	Decision          string // block, approve, allow, deny, ask, defer (raw)
	Reason            string
	Continue          *bool
	StopReason        string
	SuppressOutput    bool
	SystemMessage     string
	AdditionalContext string
	UpdatedInput      json.RawMessage
	// Invalid notes a JSON answer that could not be read (reported once).
	Invalid string
	// Duration of the run (live only; never logged durably).
	Duration time.Duration
}

// Decode applies the hook protocol to one run: exit 2 blocks with stderr
// as the reason; exit 0 may carry JSON (a leading "{" on stdout); any other
// exit is a non-blocking error.
func Decode(exit *int, stdout, stderr, event string) Output {
	o := Output{ExitCode: exit, Stdout: strings.TrimSpace(stdout), Stderr: strings.TrimSpace(stderr)}
	if exit == nil || *exit != 0 {
		if exit != nil && *exit == 2 {
			o.Decision, o.Reason = "block", o.Stderr
		}
		return o
	}
	if !strings.HasPrefix(o.Stdout, "{") {
		return o
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(o.Stdout), &raw); err != nil {
		o.Invalid = "hook printed invalid JSON: " + err.Error()
		return o
	}
	str := func(k string) (string, bool) {
		var s string
		if v, ok := raw[k]; ok && json.Unmarshal(v, &s) == nil {
			return s, true
		}
		return "", false
	}
	if v, ok := raw["continue"]; ok {
		var b bool
		if json.Unmarshal(v, &b) == nil {
			o.Continue = &b
		}
	}
	o.StopReason, _ = str("stopReason")
	o.SystemMessage, _ = str("systemMessage")
	if v, ok := raw["suppressOutput"]; ok {
		_ = json.Unmarshal(v, &o.SuppressOutput)
	}
	if d, ok := str("decision"); ok && (d == "block" || d == "approve") {
		o.Decision = d
	}
	o.Reason, _ = str("reason")
	if v, ok := raw["hookSpecificOutput"]; ok {
		var h map[string]json.RawMessage
		if json.Unmarshal(v, &h) == nil {
			var name string
			_ = json.Unmarshal(h["hookEventName"], &name)
			if name == "" || name == event {
				var s string
				if json.Unmarshal(h["permissionDecision"], &s) == nil && (s == "allow" || s == "deny" || s == "ask" || s == "defer") {
					o.Decision = s
				}
				if json.Unmarshal(h["permissionDecisionReason"], &s) == nil && s != "" {
					o.Reason = s
				}
				if json.Unmarshal(h["additionalContext"], &s) == nil {
					o.AdditionalContext = s
				}
				if u, ok := h["updatedInput"]; ok && len(u) > 0 && u[0] == '{' {
					o.UpdatedInput = u
				}
				// PermissionRequest answers {decision:{behavior:allow|deny, message}}.
				var pr struct {
					Behavior string `json:"behavior"`
					Message  string `json:"message"`
				}
				if json.Unmarshal(h["decision"], &pr) == nil && pr.Behavior != "" {
					o.Decision, o.Reason = pr.Behavior, pr.Message
				}
			}
		}
	}
	return o
}

// Merged is several hooks' answers combined, most restrictive first.
type Merged struct {
	Decision       string // deny, ask, allow, defer or ""
	Reason         string
	Stop           bool
	StopReason     string
	Contexts       []string
	SystemMessages []string
	UpdatedInput   json.RawMessage
	// Conflicts reports later rewrites that disagreed with the first.
	Conflicts []string
}

func rank(d string) int {
	switch d {
	case "deny", "block":
		return 4
	case "ask":
		return 3
	case "allow", "approve":
		return 2
	case "defer":
		return 1
	}
	return 0
}

// Merge combines outputs in configuration order: deny > ask > allow >
// defer; reasons of the winning rank joined; the first rewrite wins and
// later different ones are reported.
func Merge(outs []Output) Merged {
	var m Merged
	best := 0
	var reasons []string
	for _, o := range outs {
		r := rank(o.Decision)
		if r > best {
			best, reasons = r, nil
		}
		if r == best && r > 0 && o.Reason != "" {
			reasons = append(reasons, o.Reason)
		}
		if o.Continue != nil && !*o.Continue && !m.Stop {
			m.Stop, m.StopReason = true, o.StopReason
		}
		if o.AdditionalContext != "" {
			m.Contexts = append(m.Contexts, o.AdditionalContext)
		}
		if o.SystemMessage != "" {
			m.SystemMessages = append(m.SystemMessages, o.SystemMessage)
		}
		if o.UpdatedInput != nil {
			if m.UpdatedInput == nil {
				m.UpdatedInput = o.UpdatedInput
			} else if !jsonEqual(m.UpdatedInput, o.UpdatedInput) {
				m.Conflicts = append(m.Conflicts, "a later hook's updatedInput was ignored: "+string(o.UpdatedInput))
			}
		}
	}
	switch best {
	case 4:
		m.Decision = "deny"
	case 3:
		m.Decision = "ask"
	case 2:
		m.Decision = "allow"
	case 1:
		m.Decision = "defer"
	}
	m.Reason = strings.Join(reasons, "\n\n")
	return m
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// Runner executes hooks through the bash seam.
type Runner struct {
	Exec bash.Executor
	// DefaultTimeout applies to hooks without their own (600 s).
	DefaultTimeout time.Duration
}

// Run executes hooks concurrently (both dialects run matched hooks
// together) and returns their outputs in configuration order.
func (r Runner) Run(ctx context.Context, hooks []Hook, payload []byte, event, cwd string, env map[string]string) []Output {
	outs := make([]Output, len(hooks))
	var wg sync.WaitGroup
	for i, h := range hooks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = r.one(ctx, h, payload, event, cwd, env)
		}()
	}
	wg.Wait()
	return outs
}

func (r Runner) one(ctx context.Context, h Hook, payload []byte, event, cwd string, env map[string]string) Output {
	timeout := r.DefaultTimeout
	if timeout <= 0 {
		timeout = DefaultTimeoutSeconds * time.Second
	}
	if h.Timeout > 0 {
		timeout = time.Duration(h.Timeout * float64(time.Second))
	}
	start := time.Now()
	res, err := r.Exec.Run(ctx, bash.ExecRequest{Command: h.Command, Workdir: cwd, Timeout: timeout, Stdin: payload, Env: env})
	if err != nil {
		o := Decode(nil, "", err.Error(), event)
		o.Duration = time.Since(start)
		return o
	}
	exit := res.ExitCode
	stderr := res.Stderr.Text
	if res.TimedOut {
		exit = nil
		stderr = strings.TrimSpace(stderr + "\nhook timed out after " + timeout.String() + " and was killed")
	}
	o := Decode(exit, res.Stdout.Text, stderr, event)
	o.Duration = time.Since(start)
	return o
}
