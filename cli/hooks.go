package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dshq/dsh/hooks"
	"github.com/dshq/dsh/internal/claudemsg"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

func init() { extraCommands = append(extraCommands, newHooksCmd) }

// newHooksCmd is `dsh hooks`: try the configured Claude Code and Codex
// hooks without running the agent.
func newHooksCmd(stdio IO) *cobra.Command {
	root := &cobra.Command{
		Use:   "hooks",
		Short: "try this directory's Claude Code and Codex hooks against a synthetic event or a recorded session",
		Long: `Hooks are read as a run in this directory reads them: ~/.claude/settings.json,
.claude/settings*.json, dsh's settings "hooks", ~/.codex/hooks.json and
.codex/hooks.json (project hooks only in a trusted project). The hooks run
for real — a formatter formats, a logger logs; --dry-run only shows which
hooks match and the payload each would get.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var o hookRunOptions
	test := &cobra.Command{
		Use:   "test EVENT",
		Short: "run the hooks of EVENT against a synthetic payload (e.g. dsh hooks test PreToolUse --tool Bash --input '{\"command\":\"rm -rf /\"}')",
		Long: `Builds the payload EVENT's hooks would get — tool events from --tool (a
Claude Code name such as Bash, Edit or Agent, Codex's apply_patch, an MCP
tool, or a dsh name) and --input (the tool input, in Claude Code's argument
names); PostToolUse from --response (the tool_response) — and runs every
matching hook, printing its payload, output, exit code, decision and time.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runHooksTest(cmd.Context(), stdio, o, args[0]) },
	}
	fl := test.Flags()
	fl.StringVar(&o.tool, "tool", "", "the tool of a tool event")
	fl.StringVar(&o.input, "input", "", "the tool input as JSON (Claude Code's argument names)")
	fl.StringVar(&o.response, "response", "", "PostToolUse: the tool_response as JSON")
	fl.StringVar(&o.prompt, "prompt", "", "UserPromptSubmit: the prompt")
	fl.StringVar(&o.subject, "matcher-value", "", "what a non-tool event's matcher sees (SessionStart source, SessionEnd reason, …)")
	replay := &cobra.Command{
		Use:   "replay SESSION",
		Short: "run the hooks against the recorded tool calls of a session (PreToolUse, then PostToolUse or PostToolUseFailure per call)",
		Args:  cobra.ExactArgs(1),
		RunE:  func(cmd *cobra.Command, args []string) error { return runHooksReplay(cmd.Context(), stdio, o, args[0]) },
	}
	for _, c := range []*cobra.Command{test, replay} {
		f := c.Flags()
		f.BoolVar(&o.json, "json", false, "print JSON")
		f.BoolVar(&o.dryRun, "dry-run", false, "match the hooks and build their payloads, without running them")
		f.BoolVar(&o.trust, "trust", false, "trust this project's hooks (recorded in $DSH_HOME/trust.json)")
		f.StringVar(&o.settingsFile, "settings", "", "an extra settings file, applied last")
	}
	root.AddCommand(test, replay)
	return root
}

type hookRunOptions struct {
	tool, input, response, prompt, subject string
	json, dryRun, trust                    bool
	settingsFile                           string
}

// hookApp builds the application as a run here would, for its bridges.
func hookApp(ctx context.Context, stdio IO, o hookRunOptions) ([]*hooks.Bridge, func(), error) {
	quiet := stdio
	quiet.Interactive = false
	a, done, err := setup(ctx, quiet, flags{configFlags: configFlags{settingsFile: o.settingsFile, trust: o.trust}})
	if err != nil {
		return nil, nil, err
	}
	return a.Hooks(), done, nil
}

func runHooksTest(ctx context.Context, stdio IO, o hookRunOptions, event string) error {
	bridges, done, err := hookApp(ctx, stdio, o)
	if err != nil {
		return err
	}
	defer done()
	cwd, _ := os.Getwd()
	p := hooks.Probe{Event: event, Cwd: cwd, SessionID: "hooks-test", CallID: "toolu_hooks_test", Subject: o.subject, Fields: map[string]any{}}
	if o.tool != "" {
		p.Tool = hooks.ToolForName(o.tool)
		in := json.RawMessage(`{}`)
		if o.input != "" {
			if !json.Valid([]byte(o.input)) {
				return usageErr("--input is not JSON: %s", o.input)
			}
			in = json.RawMessage(o.input)
		}
		p.Args = claudemsg.FromToolInput(p.Tool, in)
		switch event {
		case "PostToolUseFailure":
			r := tool.ErrorResult("Error: the tool failed (synthetic failure from dsh hooks test)")
			p.Result = &r
		case "PostToolUse":
			if o.response != "" {
				if !json.Valid([]byte(o.response)) {
					return usageErr("--response is not JSON: %s", o.response)
				}
				p.Response = json.RawMessage(o.response)
			}
		}
	}
	switch event {
	case "UserPromptSubmit":
		p.Fields["prompt"] = o.prompt
	case "SessionStart":
		p.Fields["source"] = firstNonEmpty(o.subject, "startup")
	case "SessionEnd":
		p.Fields["reason"] = firstNonEmpty(o.subject, hooks.EndOther)
	case "Stop", "SubagentStop":
		p.Fields["stop_hook_active"] = false
	case "Notification":
		p.Fields["message"], p.Fields["notification_type"] = "dsh needs your permission", firstNonEmpty(o.subject, "permission_prompt")
	case "PreCompact", "PostCompact":
		p.Fields["trigger"] = firstNonEmpty(o.subject, "manual")
	}
	var trials []hooks.Trial
	for _, b := range bridges {
		trials = append(trials, b.Simulate(ctx, p, o.dryRun)...)
	}
	return printTrials(stdio.Out, trials, o, fmt.Sprintf("no hook matches %s%s here", event, toolSuffix(o.tool)))
}

func toolSuffix(t string) string {
	if t == "" {
		return ""
	}
	return " for " + t
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func runHooksReplay(ctx context.Context, stdio IO, o hookRunOptions, id string) error {
	c, closeStore, err := openStore(stdio, o.settingsFile)
	if err != nil {
		return err
	}
	h, events, err := c.Load(ctx, session.ID(id))
	closeStore()
	if err != nil {
		return &ExitError{Code: 2, Err: err}
	}
	bridges, done, err := hookApp(ctx, stdio, o)
	if err != nil {
		return err
	}
	defer done()
	calls := map[llm.CallID]session.ToolCall{}
	var trials []hooks.Trial
	for _, e := range events {
		switch e.Type {
		case session.TypeToolCall:
			tc, err := session.Decode[session.ToolCall](e)
			if err != nil {
				continue
			}
			calls[tc.CallID] = tc
			for _, b := range bridges {
				trials = append(trials, b.Simulate(ctx, hooks.Probe{Event: "PreToolUse", Cwd: h.Cwd, SessionID: h.ID,
					Tool: tc.Name, Args: json.RawMessage(tc.Arguments), CallID: string(tc.CallID)}, o.dryRun)...)
			}
		case session.TypeToolResult:
			if e.SurfaceOp != nil && e.SurfaceOp.Replace {
				continue
			}
			tr, err := session.Decode[session.ToolResult](e)
			if err != nil {
				continue
			}
			tc, ok := calls[tr.CallID]
			if !ok || tr.Error != nil && tr.Error.Code == "not-run" {
				continue
			}
			res := tool.Result{Content: tr.Content, Meta: tr.Meta, IsError: tr.IsError}
			for _, b := range bridges {
				trials = append(trials, b.Simulate(ctx, hooks.Probe{Event: "PostToolUse", Cwd: h.Cwd, SessionID: h.ID,
					Tool: tc.Name, Args: json.RawMessage(tc.Arguments), CallID: string(tc.CallID), Result: &res}, o.dryRun)...)
			}
		}
	}
	return printTrials(stdio.Out, trials, o, "no hook matches the tool calls of session "+id)
}

// trialJSON is a trial as `--json` prints it.
type trialJSON struct {
	Dialect    string          `json:"dialect"`
	Event      string          `json:"event"`
	Hook       string          `json:"hook"`
	Type       string          `json:"type"`
	Source     string          `json:"source"`
	Async      bool            `json:"async,omitempty"`
	Payload    json.RawMessage `json:"payload"`
	ExitCode   *int            `json:"exitCode,omitempty"`
	Decision   string          `json:"decision,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	Stdout     string          `json:"stdout,omitempty"`
	Stderr     string          `json:"stderr,omitempty"`
	Problem    string          `json:"problem,omitempty"`
	DurationMS int64           `json:"durationMs"`
}

func printTrials(w io.Writer, trials []hooks.Trial, o hookRunOptions, none string) error {
	if o.json {
		out := make([]trialJSON, 0, len(trials))
		for _, t := range trials {
			out = append(out, trialJSON{Dialect: t.Dialect, Event: t.Event, Hook: hookText(t.Hook), Type: t.Hook.Type, Source: t.Hook.Source,
				Async: t.Hook.Async, Payload: t.Payload, ExitCode: t.Output.ExitCode, Decision: t.Decision, Reason: t.Output.Reason,
				Stdout: t.Output.Stdout, Stderr: t.Output.Stderr, Problem: t.Output.Invalid, DurationMS: t.Output.Duration.Milliseconds()})
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	if len(trials) == 0 {
		fmt.Fprintln(w, none)
		return nil
	}
	for i, t := range trials {
		if i > 0 {
			fmt.Fprintln(w)
		}
		head := t.Event + " · " + t.Dialect
		var p struct {
			Tool string `json:"tool_name"`
			ID   string `json:"tool_use_id"`
		}
		_ = json.Unmarshal(t.Payload, &p)
		if p.Tool != "" {
			head += " · " + p.Tool
			if p.ID != "" {
				head += " (" + p.ID + ")"
			}
		}
		fmt.Fprintln(w, head)
		kind := t.Hook.Type
		if t.Hook.Async {
			kind += ", async"
		}
		fmt.Fprintf(w, "  hook      %s  [%s, %s]\n", hookText(t.Hook), kind, t.Hook.Source)
		fmt.Fprintf(w, "  payload   %s\n", strings.TrimSpace(string(t.Payload)))
		if o.dryRun {
			continue
		}
		res := "exit " + exitText(t.Output.ExitCode)
		if t.Output.TimedOut {
			res = "timed out"
		}
		res += " · " + t.Output.Duration.Round(time.Millisecond).String() + " · " + t.Decision
		if t.Output.Reason != "" {
			res += ": " + oneLineText(t.Output.Reason)
		}
		fmt.Fprintf(w, "  result    %s\n", res)
		for _, l := range []struct{ name, text string }{{"stdout", t.Output.Stdout}, {"stderr", t.Output.Stderr}, {"problem", t.Output.Invalid},
			{"context", t.Output.AdditionalContext}, {"message", t.Output.SystemMessage}} {
			if l.text != "" {
				fmt.Fprintf(w, "  %-9s %s\n", l.name, indentLines(l.text))
			}
		}
	}
	return nil
}

func hookText(h hooks.Hook) string {
	if h.Type == hooks.TypePrompt {
		return h.Prompt
	}
	return h.Command
}

func exitText(code *int) string {
	if code == nil {
		return "-"
	}
	return fmt.Sprint(*code)
}

func oneLineText(s string) string { return strings.Join(strings.Fields(s), " ") }

func indentLines(s string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n            ")
}
