package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/pflag"

	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/headless"
	"github.com/dshq/dsh/internal/exepages"
	"github.com/dshq/dsh/mcp"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
)

// headlessFlags are Claude Code's -p flags that only headless runs read.
type headlessFlags struct {
	inputFormat            string
	includePartialMessages bool
	permissionPromptTool   string
	jsonSchema             string
	sessionID              string
	forkSession            bool
	systemPrompt           string
	mcpConfig              []string
	skipPermissions        bool
	allowSkipPermissions   bool
	maxBudgetUSD           float64
	replayUserMessages     bool
	debug                  string
	agents                 string
	ignored                []string
}

// pickSession is the value -r takes without an id: pick one.
const pickSession = "\x00pick"

func (h *headlessFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&h.inputFormat, "input-format", "text", "headless input: text (the prompt) or stream-json (user messages and the Claude Agent SDK's control protocol as JSON lines on stdin)")
	fl.BoolVar(&h.includePartialMessages, "include-partial-messages", false, "stream-json: also emit stream_event lines with partial deltas as the model writes")
	fl.StringVar(&h.permissionPromptTool, "permission-prompt-tool", "", "answer permission questions with this MCP tool (mcp__server__tool), or stdio: the SDK's canUseTool")
	fl.StringVar(&h.jsonSchema, "json-schema", "", "JSON Schema (text or @file) the final answer must conform to; the parsed value is the result's structured_output")
	fl.StringVar(&h.sessionID, "session-id", "", "the id of the new session (a UUID you choose)")
	fl.BoolVar(&h.forkSession, "fork-session", false, "with --resume or --continue: continue in a new session, leaving the original as it was")
	fl.StringVar(&h.systemPrompt, "system-prompt", "", "replace dsh's system prompt with this text (headless)")
	stringArrayVar(fl, &h.mcpConfig, "mcp-config", "MCP servers from JSON files or strings ({\"mcpServers\": {...}}), added to the configured ones")
	fl.BoolVar(&h.skipPermissions, "dangerously-skip-permissions", false, "run every tool without asking (permission mode bypassPermissions)")
	fl.BoolVar(&h.allowSkipPermissions, "allow-dangerously-skip-permissions", false, "allow switching to bypassPermissions later in the session")
	fl.Float64Var(&h.maxBudgetUSD, "max-budget-usd", 0, "stop a turn once its estimated cost passes this many dollars")
	fl.BoolVar(&h.replayUserMessages, "replay-user-messages", false, "stream-json: echo user messages from stdin back on stdout")
	fl.StringVar(&h.agents, "agents", "", "subagents defined inline, as JSON: {\"name\": {\"description\", \"prompt\", \"tools\", \"model\"}}")
	fl.StringVar(&h.debug, "debug", "", "log debug details to stderr and the log file (an optional category filter is accepted)")
	fl.Lookup("debug").NoOptDefVal = "all"
	// Flags the Claude Agent SDK may pass that dsh accepts and ignores,
	// saying so on stderr; the switches among them take no value.
	for _, name := range []string{"fallback-model", "max-thinking-tokens", "thinking", "effort", "betas",
		"agent", "debug-file", "tools", "permission-prompts", "resume-session-at", "setting-sources"} {
		fl.Var(&ignoredFlag{name: name, seen: &h.ignored}, name, "accepted for compatibility with Claude Code; no effect in dsh")
		_ = fl.MarkHidden(name)
	}
	for _, name := range []string{"include-hook-events", "no-session-persistence"} {
		fl.Var(&ignoredFlag{name: name, seen: &h.ignored}, name, "accepted for compatibility with Claude Code; no effect in dsh")
		fl.Lookup(name).NoOptDefVal = "true"
		_ = fl.MarkHidden(name)
	}
	fl.SetNormalizeFunc(claudeNames)
}

// ignoredFlag accepts a Claude Code flag dsh does not act on and notes its
// name, so the run can say so instead of silently doing without it.
type ignoredFlag struct {
	name string
	seen *[]string
}

func (f *ignoredFlag) String() string { return "" }
func (f *ignoredFlag) Type() string   { return "string" }
func (f *ignoredFlag) Set(string) error {
	if !slices.Contains(*f.seen, "--"+f.name) {
		*f.seen = append(*f.seen, "--"+f.name)
	}
	return nil
}

// claudeNames lets both spellings Claude Code documents reach one flag:
// --allowed-tools is --allowedTools.
func claudeNames(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	switch name {
	case "allowed-tools":
		name = "allowedTools"
	case "disallowed-tools":
		name = "disallowedTools"
	}
	return pflag.NormalizedName(name)
}

// optionalResume lets -r and --resume go without an id (Claude Code's
// `-r [id]`): an id is the next argument when it is not a flag.
func optionalResume(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		if (a == "-r" || a == "--resume") && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			out = append(out, a+"="+args[i+1])
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}

// stdinCap bounds how much piped input goes to the model with a prompt.
const stdinCap = 512 << 10

// pipedInput reads what a pipe gives alongside a -p prompt (the
// `cat log | dsh -p "explain"` idiom), up to stdinCap, saying on stderr
// and to the model when it was cut.
func pipedInput(stdio IO) (string, error) {
	if stdio.In == nil || stdio.InTerminal {
		return "", nil
	}
	hint := time.AfterFunc(3*time.Second, func() {
		fmt.Fprintln(stdio.Err, "dsh: still reading stdin for the prompt (close it, or pass </dev/null to send the prompt alone)")
	})
	b, err := io.ReadAll(io.LimitReader(stdio.In, stdinCap+1))
	hint.Stop()
	if err != nil {
		return "", fmt.Errorf("reading stdin: %v", err)
	}
	if len(b) > stdinCap {
		b = b[:stdinCap]
		for len(b) > 0 && !utf8Start(b[len(b)-1]) {
			b = b[:len(b)-1]
		}
		note := fmt.Sprintf("[dsh: standard input was cut at %d KiB; the rest was not read]", stdinCap>>10)
		fmt.Fprintf(stdio.Err, "dsh: standard input is longer than %d KiB: only its first %d KiB go to the model\n", stdinCap>>10, stdinCap>>10)
		return string(b) + "\n" + note, nil
	}
	return string(b), nil
}

func utf8Start(c byte) bool { return c < 0x80 || c >= 0xC0 }

// readMCPConfig reads --mcp-config values: files or JSON text holding
// {"mcpServers": {...}} (or the servers object itself).
func readMCPConfig(vals []string) ([]mcp.ServerConfig, error) {
	var out []mcp.ServerConfig
	for _, v := range vals {
		for _, part := range splitMCPConfig(v) {
			raw, path := []byte(part), "--mcp-config"
			if !strings.HasPrefix(strings.TrimSpace(part), "{") {
				b, err := os.ReadFile(part)
				if err != nil {
					return nil, fmt.Errorf("--mcp-config %s: %v", part, err)
				}
				raw, path = b, part
			}
			var doc struct {
				MCPServers map[string]json.RawMessage `json:"mcpServers"`
			}
			if err := json.Unmarshal(raw, &doc); err != nil {
				return nil, fmt.Errorf("--mcp-config %s: not JSON: %v", path, err)
			}
			if doc.MCPServers == nil {
				if err := json.Unmarshal(raw, &doc.MCPServers); err != nil {
					return nil, fmt.Errorf("--mcp-config %s: want {\"mcpServers\": {...}}", path)
				}
			}
			servers, err := mcp.ParseServers(doc.MCPServers, mcp.SourceCLI, path, "")
			if err != nil {
				return nil, fmt.Errorf("--mcp-config %s: %v", path, err)
			}
			out = append(out, servers...)
		}
	}
	return out, nil
}

// splitMCPConfig splits a value Claude Code accepts as several
// space-separated files; JSON text stays whole.
func splitMCPConfig(v string) []string {
	if strings.HasPrefix(strings.TrimSpace(v), "{") {
		return []string{v}
	}
	return strings.Fields(v)
}

// readJSONSchema reads --json-schema: JSON text, or @file.
func readJSONSchema(v string) (json.RawMessage, error) {
	if v == "" {
		return nil, nil
	}
	raw := []byte(v)
	if name, ok := strings.CutPrefix(v, "@"); ok {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("--json-schema %s: %v", name, err)
		}
		raw = b
	}
	if !json.Valid(raw) {
		return nil, errors.New("--json-schema: not valid JSON (pass the schema as JSON text or @file)")
	}
	return raw, nil
}

// resolveSession turns a typed id or prefix into a session id, with a
// message for people when it names none or several.
func resolveSession(ctx context.Context, l store.Lister, typed string) (session.ID, error) {
	id, err := store.Resolve(ctx, l, typed)
	if err == nil {
		return id, nil
	}
	var amb *store.AmbiguousError
	switch {
	case errors.As(err, &amb):
		return "", usageErr("%s\nrepeat with more of the id", amb.Error())
	case errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalidID):
		return "", usageErr("no session %q (dsh sessions lists them)", strings.TrimSpace(typed))
	}
	return "", &ExitError{Code: app.ExitError, Err: fmt.Errorf("listing sessions: %s", plainError(err))}
}

// plainError is the message of an error without the package prefixes of
// the layers it went through ("store: …").
func plainError(err error) string {
	msg := err.Error()
	for {
		i := strings.Index(msg, ": ")
		if i <= 0 || strings.ContainsFunc(msg[:i], func(r rune) bool { return !unicode.IsLower(r) && r != '/' }) {
			return msg
		}
		msg = msg[i+2:]
	}
}

// runHeadless runs -p.
func runHeadless(ctx context.Context, stdio IO, a *app.App, f flags, args []string, resume session.ID) error {
	h := f.headless
	prompt := strings.Join(args, " ")
	if h.inputFormat != headless.InputStreamJSON {
		if strings.TrimSpace(prompt) == "" {
			b, err := io.ReadAll(stdio.In)
			if err != nil {
				return usageErr("reading the prompt from stdin: %v", err)
			}
			prompt = string(b)
		} else {
			piped, err := pipedInput(stdio)
			if err != nil {
				return usageErr("%v", err)
			}
			if strings.TrimSpace(piped) != "" {
				prompt = strings.TrimRight(piped, "\n") + "\n\n" + prompt
			}
		}
		if strings.TrimFunc(prompt, func(r rune) bool { return unicode.IsSpace(r) || r == 0 }) == "" {
			return usageErr("no prompt: pass it as an argument or on stdin")
		}
	}
	if a.DemoFallback {
		return usageErr("no model is configured: set DEEPSEEK_API_KEY, ANTHROPIC_API_KEY or OPENAI_API_KEY, pick one with --model provider/model, or run the offline demo with --model demo")
	}
	schema, err := readJSONSchema(h.jsonSchema)
	if err != nil {
		return usageErr("%v", err)
	}
	if h.forkSession && resume == "" {
		return usageErr("--fork-session needs --resume or --continue")
	}
	if len(h.mcpConfig) > 0 && a.MCP != nil {
		servers, err := readMCPConfig(h.mcpConfig)
		if err != nil {
			return usageErr("%v", err)
		}
		// Servers named on the command line are connected before the
		// prompt (bounded by the connect timeout): the run is for them.
		if err := a.MCP.AddSessionServers(ctx, a.Host.Scope, servers); err != nil {
			return usageErr("--mcp-config: %v", err)
		}
	}
	if len(h.ignored) > 0 {
		fmt.Fprintf(stdio.Err, "dsh: ignoring Claude Code flags dsh does not support: %s\n", strings.Join(h.ignored, ", "))
	}
	log := a.Host.Logger
	code, err := headless.Run(ctx, headless.Options{
		App: a, Prompt: prompt, InputFormat: h.inputFormat, OutputFormat: f.outputFormat,
		In: stdio.In, Out: stdio.Out, Err: stdio.Err,
		Open:                   app.OpenOptions{Resume: resume, Fork: h.forkSession, SessionID: session.ID(h.sessionID)},
		IncludePartialMessages: h.includePartialMessages, PermissionPromptTool: h.permissionPromptTool,
		JSONSchema: schema, MaxBudgetUSD: h.maxBudgetUSD, SystemPrompt: h.systemPrompt,
		ReportState:        stdio.Env("CLAUDE_CODE_SDK_READS_SESSION_STATE") != "",
		ReplayUserMessages: h.replayUserMessages,
		Version:            Version, Logger: log,
		Continued: func() { exepages.ReleaseOnce(stdio.Env) },
	})
	if err != nil || code != 0 {
		if err == nil {
			err = errors.New("")
		}
		return &ExitError{Code: code, Err: err}
	}
	return nil
}
