package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dshq/dsh/bash"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/sandbox"
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
	// UpdatedOutput replaces a tool's output (PostToolUse's
	// updatedToolOutput or updatedMCPToolOutput).
	UpdatedOutput json.RawMessage
	// Invalid notes a JSON answer that could not be read (reported once).
	Invalid string
	// TimedOut reports that the hook ran into its timeout and was killed
	// (its whole process group) or, for a prompt hook, abandoned.
	TimedOut bool
	// Duration of the run (live only; never logged durably).
	Duration time.Duration
}

// Decode applies the hook protocol to one run, as Claude Code does: stdout
// that starts with "{" is read as JSON output on every exit code; exit 2
// blocks whatever the JSON says (its reason is the JSON's blocking reason,
// or stderr); any other exit without a JSON decision is a non-blocking
// error.
func Decode(exit *int, stdout, stderr, event string) Output {
	o := decodeJSON(exit, stdout, stderr, event)
	if exit != nil && *exit == 2 {
		if o.Decision != "deny" && o.Decision != "block" || o.Reason == "" {
			o.Reason = o.Stderr
		}
		o.Decision = "block"
	}
	return o
}

func decodeJSON(exit *int, stdout, stderr, event string) Output {
	o := Output{ExitCode: exit, Stdout: strings.TrimSpace(stdout), Stderr: strings.TrimSpace(stderr)}
	if !strings.HasPrefix(o.Stdout, "{") {
		return o
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(o.Stdout), &raw); err != nil {
		if exit != nil && *exit == 0 {
			o.Invalid = "hook printed invalid JSON: " + err.Error()
		}
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
				for _, k := range []string{"updatedToolOutput", "updatedMCPToolOutput"} {
					if u, ok := h[k]; ok && len(u) > 0 && string(u) != "null" {
						o.UpdatedOutput = u
						break
					}
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
	UpdatedOutput  json.RawMessage
	// Notices tell the model about hooks that timed out (set by the
	// bridge).
	Notices []string
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
		if o.UpdatedOutput != nil && m.UpdatedOutput == nil {
			m.UpdatedOutput = o.UpdatedOutput
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

// PromptFunc makes one model call for a prompt hook: the system prompt and
// the hook's prompt go to model (the session's, or the one the hook names),
// and the answer's text comes back.
type PromptFunc func(ctx context.Context, model, system, prompt string) (string, error)

// ModelPrompter evaluates prompt hooks with svc.
func ModelPrompter(svc *llm.Service) PromptFunc {
	return func(ctx context.Context, model, system, prompt string) (string, error) {
		stream, err := svc.Stream(ctx, &llm.Request{Model: model, System: system, MaxTokens: 1024,
			Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.Text(prompt)}}}})
		if err != nil {
			return "", err
		}
		var as llm.Assembler
		for ch, err := range stream {
			if err != nil {
				return "", err
			}
			if _, _, err := as.Push(ch); err != nil {
				return "", err
			}
		}
		if f := as.Finish(); f.Kind == llm.FinishError || f.Kind == llm.FinishAborted {
			return "", fmt.Errorf("the model call failed: %s", firstNonEmpty(f.Message, string(f.Kind)))
		}
		blocks, err := as.Blocks()
		if err != nil {
			return "", err
		}
		return llm.TextOf(blocks), nil
	}
}

// promptSystem tells the evaluating model what a prompt hook expects.
const promptSystem = `You evaluate a hook of a coding agent. You get the hook's instructions and the JSON input of the event that fired it.
Answer with one JSON object and nothing else: {"ok": true} when the condition holds or the action may proceed, or {"ok": false, "reason": "why, addressed to the agent"} when it does not. Add "impossible": true to ok:false only when the condition can never be met.`

// Runner executes hooks: commands through the bash seam, prompts through
// a model call.
type Runner struct {
	Exec bash.Executor
	// Prompt evaluates prompt hooks. Nil: prompt hooks cannot decide and
	// fail open (see runPrompt).
	Prompt PromptFunc
	// Sandbox, when set (sandbox.hooks), is the policy command hooks of a
	// session run under in a directory (see [sandbox.Others]); nil
	// policies run them as they are.
	Sandbox func(sessionID, cwd string) (*sandbox.Policy, error)
}

// sessionKey carries, on the context hooks run with, the session they run
// for (its sandbox mode is theirs).
type sessionKey struct{}

func withSession(ctx context.Context, id string) context.Context {
	if id == "" {
		return ctx
	}
	return context.WithValue(ctx, sessionKey{}, id)
}

// Run executes hooks concurrently (both dialects run matched hooks
// together) and returns their outputs in configuration order. model is
// the session's model, for prompt hooks that name none.
func (r Runner) Run(ctx context.Context, hooks []Hook, payload []byte, event, cwd, model string, env map[string]string) []Output {
	outs := make([]Output, len(hooks))
	var wg sync.WaitGroup
	for i, h := range hooks {
		wg.Go(func() {
			start := time.Now()
			switch {
			case h.Func != nil:
				outs[i] = r.callback(ctx, h, payload, event, h.timeout(event))
			case h.Type == TypePrompt:
				outs[i] = r.runPrompt(ctx, h, payload, event, model)
			default:
				outs[i] = r.runCommand(ctx, h, payload, event, cwd, env)
			}
			outs[i].Duration = time.Since(start)
		})
	}
	wg.Wait()
	return outs
}

// runCommand runs a command hook with the payload on stdin. The executor
// runs it in a session of its own and, at the timeout, kills that whole
// session (the hook and whatever it started); what the hook leaves running
// when it exits is killed too, so nothing a hook forks holds dsh up.
func (r Runner) runCommand(ctx context.Context, h Hook, payload []byte, event, cwd string, env map[string]string) Output {
	timeout := h.timeout(event)
	if len(h.Env) > 0 {
		merged := make(map[string]string, len(env)+len(h.Env))
		for k, v := range env {
			merged[k] = v
		}
		for k, v := range h.Env {
			merged[k] = v
		}
		env = merged
	}
	req := bash.ExecRequest{Command: h.Command, Workdir: cwd, Timeout: timeout, Stdin: payload, Env: env}
	if r.Sandbox != nil {
		id, _ := ctx.Value(sessionKey{}).(string)
		p, err := r.Sandbox(id, cwd)
		if err != nil {
			return Decode(nil, "", fmt.Sprintf("hooks: the sandbox policy (sandbox.hooks): %v", err), event)
		}
		req.Sandbox = p
	}
	res, err := r.Exec.Run(ctx, req)
	if err != nil {
		return Decode(nil, "", err.Error(), event)
	}
	if res.TimedOut {
		o := Decode(nil, res.Stdout.Text, strings.TrimSpace(res.Stderr.Text+"\n"+timeoutMessage(h, event)), event)
		o.TimedOut = true
		return o
	}
	if res.Aborted {
		return Decode(nil, res.Stdout.Text, strings.TrimSpace(res.Stderr.Text+"\nhook was stopped: "+context.Cause(ctx).Error()), event)
	}
	return Decode(res.ExitCode, res.Stdout.Text, res.Stderr.Text, event)
}

// timeoutMessage is what the agent and the user are told of a hook that
// ran out of time.
func timeoutMessage(h Hook, event string) string {
	return fmt.Sprintf("%s hook %q timed out after %s and was stopped", event, h.Label(), seconds(h.timeout(event)))
}

func seconds(d time.Duration) string {
	s := strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
	return s + " s"
}

// runPrompt evaluates a prompt hook: one model call whose JSON answer
// ({"ok", "reason", "impossible"}) becomes the hook's decision, with what
// "ok": false means on each event (see promptDecision).
//
// A prompt hook that cannot decide — no model, a failed or timed-out
// call, an answer that is not the JSON asked for — fails open: the action
// proceeds, as it does for a command hook that errs without exit code 2,
// and the failure is reported (log, stderr, `dsh doctor` cannot know it
// ahead). A policy that must hold belongs in permission rules or a command
// hook, which fail closed on exit 2.
func (r Runner) runPrompt(ctx context.Context, h Hook, payload []byte, event, model string) Output {
	if h.Model != "" {
		model = h.Model
	}
	fail := func(why string) Output {
		o := Output{Invalid: fmt.Sprintf("prompt hook could not decide (%s); the action proceeds (prompt hooks fail open)", why)}
		return o
	}
	if r.Prompt == nil {
		return fail("no model is available to evaluate it")
	}
	if model == "" {
		return fail("no model is configured")
	}
	text := h.Prompt
	if strings.Contains(text, "$ARGUMENTS") {
		text = strings.ReplaceAll(text, "$ARGUMENTS", string(bytes.TrimSpace(payload)))
	} else {
		text += "\n\n" + string(bytes.TrimSpace(payload))
	}
	timeout := h.timeout(event)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	answer, err := r.Prompt(cctx, model, promptSystem, text)
	if err != nil {
		if ctx.Err() == nil && cctx.Err() != nil {
			o := fail("timed out after " + seconds(timeout))
			o.TimedOut = true
			o.Stderr = timeoutMessage(h, event)
			return o
		}
		return fail(err.Error())
	}
	var v struct {
		OK         *bool  `json:"ok"`
		Reason     string `json:"reason"`
		Impossible bool   `json:"impossible"`
	}
	obj := jsonObject(answer)
	if obj == "" || json.Unmarshal([]byte(obj), &v) != nil || v.OK == nil {
		return fail(fmt.Sprintf("the model did not answer with {\"ok\": …}: %.200q", answer))
	}
	zero := 0
	o := Output{ExitCode: &zero, Stdout: obj}
	if *v.OK {
		return o
	}
	reason := firstNonEmpty(v.Reason, "a prompt hook said no")
	promptDecision(&o, h, event, reason, v.Impossible)
	return o
}

// promptDecision maps a prompt hook's "ok": false onto the event, as
// Claude Code does: Stop and SubagentStop continue with the reason as the
// next instruction (unless the model said the condition is impossible);
// PreToolUse denies the call and, without continueOnBlock, ends the turn;
// PostToolUse ends the turn, or with continueOnBlock feeds the reason back;
// PostToolUseFailure adds the reason to the error; UserPromptSubmit rejects
// the prompt; PermissionRequest ignores it.
func promptDecision(o *Output, h Hook, event, reason string, impossible bool) {
	stop := func() {
		f := false
		o.Continue, o.StopReason = &f, reason
	}
	switch event {
	case "Stop", "SubagentStop":
		if !impossible {
			o.Decision, o.Reason = "block", reason
		}
	case "PreToolUse":
		o.Decision, o.Reason = "deny", reason
		if !h.ContinueOnBlock {
			stop()
		}
	case "PostToolUse":
		if h.ContinueOnBlock {
			o.Decision, o.Reason = "block", reason
		} else {
			stop()
		}
	case "PostToolUseFailure":
		o.AdditionalContext = reason
	case "UserPromptSubmit":
		o.Decision, o.Reason = "block", reason
	}
}

// jsonObject returns the first complete JSON object in s (models wrap
// answers in prose or code fences), or "".
func jsonObject(s string) string {
	for i := strings.IndexByte(s, '{'); i >= 0; {
		dec := json.NewDecoder(strings.NewReader(s[i:]))
		var raw json.RawMessage
		if dec.Decode(&raw) == nil && len(raw) > 0 && raw[0] == '{' {
			return string(raw)
		}
		j := strings.IndexByte(s[i+1:], '{')
		if j < 0 {
			break
		}
		i += j + 1
	}
	return ""
}

// callback runs an in-process hook (Hook.Func) within its timeout.
func (r Runner) callback(ctx context.Context, h Hook, payload []byte, event string, timeout time.Duration) Output {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := h.Func(cctx, payload)
	if err == nil {
		zero := 0
		return Decode(&zero, string(out), "", event)
	}
	msg := err.Error()
	timedOut := cctx.Err() != nil && ctx.Err() == nil
	if timedOut {
		msg = timeoutMessage(h, event)
	}
	if h.BlockOnFailure {
		two := 2
		return Decode(&two, "", "hook callback failed, and it blocks on failure: "+msg, event)
	}
	o := Decode(nil, "", "hook callback failed: "+msg, event)
	o.TimedOut = timedOut
	return o
}
