package permission

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/dshq/dsh/bash/analysis"
)

// Behavior is what a rule or a decision says about a call.
type Behavior string

// Behaviors, from the weakest to the strongest: when several rules match a
// call, deny beats ask and ask beats allow, whatever file they came from.
const (
	Allow Behavior = "allow"
	Ask   Behavior = "ask"
	Deny  Behavior = "deny"
)

// strength orders behaviors so combining two verdicts keeps the stricter.
func (b Behavior) strength() int {
	switch b {
	case Deny:
		return 2
	case Ask:
		return 1
	}
	return 0
}

func (b Behavior) valid() bool { return b == Allow || b == Ask || b == Deny }

// SourceSession is the source of a session's own rules: remembered
// approval answers and /permissions additions for one session. Every other
// rule's source is where the settings pipeline read it: a settings file's
// path, or the flag that gave it ("--allowedTools").
const SourceSession = "session"

// Rule is one permission rule as written in settings ("Bash(git diff:*)",
// "Read(./src/**)", "mcp__github"), what it does, and where it came from
// (a settings file path, a flag, or "session") so every decision can name
// what a user has to change to change it.
type Rule struct {
	Text     string   `json:"rule"`
	Behavior Behavior `json:"behavior"`
	Source   string   `json:"source,omitempty"`
}

// String renders the rule as /permissions lists it.
func (r Rule) String() string {
	if r.Source == "" {
		return fmt.Sprintf("%s %s", r.Behavior, r.Text)
	}
	return fmt.Sprintf("%s %s (%s)", r.Behavior, r.Text, r.Source)
}

// Tool names. dsh's own names are canonical; the Claude Code names users
// already write in their settings are accepted as aliases of them.
const (
	toolBash      = "bash"
	toolRead      = "read"
	toolWrite     = "write"
	toolEdit      = "edit"
	toolGlob      = "glob"
	toolGrep      = "grep"
	toolLS        = "ls"
	toolWebFetch  = "web_fetch"
	toolWebSearch = "web_search"
	toolTodoWrite = "todo_write"
	toolBashOut   = "bash_output"
	toolBashKill  = "bash_kill"
	// ExitPlanTool is the name of the tool that ends plan mode.
	ExitPlanTool = "exit_plan_mode"
)

// claudeNames maps Claude Code tool names to dsh's.
var claudeNames = map[string]string{
	"Bash":         toolBash,
	"Read":         toolRead,
	"Write":        toolWrite,
	"Edit":         toolEdit,
	"MultiEdit":    toolEdit,
	"Glob":         toolGlob,
	"Grep":         toolGrep,
	"LS":           toolLS,
	"WebFetch":     toolWebFetch,
	"WebSearch":    toolWebSearch,
	"TodoWrite":    toolTodoWrite,
	"BashOutput":   toolBashOut,
	"KillShell":    toolBashKill,
	"KillBash":     toolBashKill,
	"ExitPlanMode": ExitPlanTool,
	// Claude Code's subagent tool (Agent, formerly Task) is dsh's task.
	"Agent": "task",
	"Task":  "task",
	"Skill": "skill",
}

// displayNames are the names generated rules use: the Claude spelling, so
// remembered rules read like the ones users write.
var displayNames = map[string]string{
	toolBash: "Bash", toolRead: "Read", toolWrite: "Write", toolEdit: "Edit",
	toolGlob: "Glob", toolGrep: "Grep", toolLS: "LS", toolWebFetch: "WebFetch",
	toolWebSearch: "WebSearch", toolTodoWrite: "TodoWrite",
}

// canonical maps a tool name (rule or call) to dsh's name.
func canonical(name string) string {
	if c, ok := claudeNames[name]; ok {
		return c
	}
	return name
}

// pathTools take a file or directory path argument that rules match.
var pathTools = map[string]bool{toolRead: true, toolWrite: true, toolEdit: true, toolGlob: true, toolGrep: true, toolLS: true}

// covers reports whether a rule written for ruleTool applies to a call of
// callTool. Read rules cover every tool that reads files (read, glob, grep,
// ls), Edit rules cover write as well, so a deny on Read(~/.ssh/**) cannot
// be sidestepped with grep and Edit(docs/**) allows writing new docs.
func covers(ruleTool, callTool string) bool {
	if ruleTool == callTool {
		return true
	}
	switch ruleTool {
	case toolRead:
		return callTool == toolGlob || callTool == toolGrep || callTool == toolLS
	case toolEdit:
		return callTool == toolWrite
	}
	return false
}

type ruleKind int

const (
	kindAny        ruleKind = iota // the tool, whatever its arguments
	kindBashExact                  // Bash(npm run test)
	kindBashPrefix                 // Bash(git diff:*)
	kindPath                       // Read(./src/**)
	kindDomain                     // WebFetch(domain:example.com)
	kindMCPServer                  // mcp__server, mcp__server__*
)

// rule is a parsed Rule.
type rule struct {
	Rule
	tool   string // canonical tool name; the server prefix for kindMCPServer
	kind   ruleKind
	words  []string // bash words
	path   pathPattern
	domain string // lower case; "*.x.y" matches subdomains
}

var toolNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.-]+$`) })

// CheckRule reports whether text is a rule dsh understands (home expands
// ~), with the reason when it is not. Readers of other tools' settings use
// it to decide what to do with a rule before the checker sees it.
func CheckRule(text, home string) error {
	_, err := parseRule(Rule{Text: text, Behavior: Deny}, home)
	return err
}

// RuleTool returns the tool a rule names, without its argument
// ("Bash(git * main)" → "Bash").
func RuleTool(text string) string {
	name, _, _ := strings.Cut(strings.TrimSpace(text), "(")
	return strings.TrimSpace(name)
}

// parseRule parses r.Text. Errors name the rule and its file, because a rule
// that silently matches nothing (or everything) is exactly the mistake a
// permission system must not make quietly.
func parseRule(r Rule, home string) (*rule, error) {
	fail := func(format string, args ...any) error {
		msg := fmt.Sprintf(format, args...)
		if r.Source != "" {
			return fmt.Errorf("permission: rule %q from %s: %s", r.Text, r.Source, msg)
		}
		return fmt.Errorf("permission: rule %q: %s", r.Text, msg)
	}
	if !r.Behavior.valid() {
		return nil, fail("unknown behavior %q (want allow, ask or deny)", r.Behavior)
	}
	text := strings.TrimSpace(r.Text)
	name, spec, hasSpec := text, "", false
	if i := strings.IndexByte(text, '('); i >= 0 {
		if !strings.HasSuffix(text, ")") {
			return nil, fail("missing closing parenthesis")
		}
		name, spec, hasSpec = strings.TrimSpace(text[:i]), text[i+1:len(text)-1], true
	}
	bare := name
	if strings.HasPrefix(name, "mcp__") {
		bare = strings.TrimSuffix(name, "__*")
	}
	if !toolNameRE().MatchString(bare) {
		return nil, fail("%q is not a tool name", name)
	}
	out := &rule{Rule: r, tool: canonical(name)}
	out.Text = text
	if strings.HasPrefix(name, "mcp__") {
		if hasSpec {
			return nil, fail("MCP rules take no argument; name the tool (mcp__server__tool) or the server (mcp__server)")
		}
		parts := strings.Split(strings.TrimPrefix(name, "mcp__"), "__")
		switch {
		case parts[0] == "":
			return nil, fail("missing MCP server name")
		case len(parts) == 1:
			out.kind, out.tool = kindMCPServer, "mcp__"+parts[0]+"__"
		case len(parts) == 2 && parts[1] == "*":
			out.kind, out.tool = kindMCPServer, "mcp__"+parts[0]+"__"
		}
		return out, nil
	}
	if !hasSpec || spec == "*" {
		return out, nil
	}
	if strings.TrimSpace(spec) == "" {
		return nil, fail("empty argument; write %s alone to match every call", name)
	}
	var err error
	switch {
	case out.tool == toolBash:
		err = out.parseBash(spec)
	case pathTools[out.tool]:
		out.kind = kindPath
		out.path, err = compilePathPattern(spec, home)
	case out.tool == toolWebFetch:
		err = out.parseDomain(spec)
	default:
		err = fmt.Errorf("%s rules take no argument (arguments are understood for Bash, Read, Write, Edit, Glob, Grep, LS and WebFetch)", name)
	}
	if err != nil {
		return nil, fail("%v", err)
	}
	return out, nil
}

// parseBash reads "prefix:*", "prefix *" (the same) or an exact command.
// The words are split by the shell parser, so quoting in a rule means what it
// means on the command line.
func (r *rule) parseBash(spec string) error {
	prefix := false
	if s, ok := strings.CutSuffix(spec, ":*"); ok {
		spec, prefix = s, true
	}
	if strings.TrimSpace(spec) == "" {
		return errors.New("empty command; write Bash alone to match every command")
	}
	words, trailingStar, err := analysis.LiteralCommand(spec)
	if err != nil {
		return err
	}
	if trailingStar {
		if prefix {
			return errors.New("write either a trailing :* or a trailing *, not both")
		}
		prefix = true
	}
	if len(words) == 0 {
		return errors.New("empty command; write Bash alone to match every command")
	}
	r.words = words
	r.kind = kindBashExact
	if prefix {
		r.kind = kindBashPrefix
	}
	return nil
}

func (r *rule) parseDomain(spec string) error {
	d, ok := strings.CutPrefix(strings.TrimSpace(spec), "domain:")
	d = strings.ToLower(strings.TrimSpace(d))
	if !ok || d == "" || strings.ContainsAny(d, "/ :") {
		return errors.New(`WebFetch rules take "domain:host" (for example WebFetch(domain:example.com) or WebFetch(domain:*.example.com))`)
	}
	if strings.Contains(strings.TrimPrefix(d, "*."), "*") {
		return errors.New("a domain may only start with *. (subdomains)")
	}
	r.kind, r.domain = kindDomain, d
	return nil
}

// appliesTo reports whether the rule is about calls of tool at all.
func (r *rule) appliesTo(tool string) bool {
	if r.kind == kindMCPServer {
		return strings.HasPrefix(tool, r.tool)
	}
	if r.kind == kindPath || r.kind == kindAny {
		return covers(r.tool, tool)
	}
	return r.tool == tool
}

// matchHost matches a WebFetch host.
func (r *rule) matchHost(host string) bool {
	if r.kind == kindAny {
		return true
	}
	if r.kind != kindDomain {
		return false
	}
	host = strings.ToLower(host)
	if sub, ok := strings.CutPrefix(r.domain, "*."); ok {
		return strings.HasSuffix(host, "."+sub)
	}
	return host == r.domain
}

// ToolRule is the rule text that covers every call of the tool called
// name (an editor's "always reject"): the name itself. A rule naming a
// tool also covers the tools it stands for (Read covers glob, grep and
// ls; Edit covers write), so rejecting reads cannot be sidestepped.
func ToolRule(name string) string { return canonical(strings.TrimSpace(name)) }
