package term

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/dshq/dsh/compact"
	"github.com/dshq/dsh/llm"
)

// /status and /context read the last request the current agent sent (kept
// by the UI's request middleware): what the model was really given, not a
// reconstruction that could drift from it.

// memoryHeading starts the memory files' section of the system prompt
// (memory.Set.Render); each file follows under "## path (whose)".
const memoryHeading = "# Memory\n\n"

// contextPart is one line of /context.
type contextPart struct {
	name   string
	tokens int
	detail string
}

// contextParts breaks a request down into the parts /context shows. Every
// part is estimated with the compactor's rule (a quarter of the bytes,
// plus a few tokens of framing per message), so the parts add up to the
// total shown.
func contextParts(req *llm.Request) []contextPart {
	system, memory := req.System, ""
	if i := strings.Index(system, memoryHeading); i >= 0 {
		system, memory = req.System[:i], req.System[i:]
		// A later section (after the memory files) is the system prompt's.
		if j := strings.Index(memory[len(memoryHeading):], "\n\n# "); j >= 0 {
			j += len(memoryHeading)
			system += memory[j:]
			memory = memory[:j]
		}
	}
	var builtin, mcp, nb, nm int
	var params bytes.Buffer
	for _, t := range req.Tools {
		// A schema is sent compact (the adapters marshal it with
		// encoding/json): the indentation some tools write theirs with
		// never reaches the model.
		params.Reset()
		if json.Compact(&params, t.Parameters) != nil {
			params.Reset()
			params.Write(t.Parameters)
		}
		n := quarter(len(t.Name)) + quarter(len(t.Description)) + quarter(params.Len())
		if strings.HasPrefix(t.Name, "mcp__") {
			mcp, nm = mcp+n, nm+1
		} else {
			builtin, nb = builtin+n, nb+1
		}
	}
	history := 0
	for _, m := range req.Messages {
		history += compact.ContentTokens(m.Content) + 4
	}
	files := memoryFiles(memory)
	return []contextPart{
		{"system prompt", quarter(len(system)), ""},
		{"tool schemas", builtin, fmt.Sprintf("%d %s", nb, plural(nb, "tool", "tools"))},
		{"memory files", quarter(len(memory)), strings.Join(files, ", ")},
		{"MCP tools", mcp, fmt.Sprintf("%d %s", nm, plural(nm, "tool", "tools"))},
		{"history", history, fmt.Sprintf("%d %s", len(req.Messages), plural(len(req.Messages), "message", "messages"))},
	}
}

// memoryFiles are the paths of the memory section's files.
func memoryFiles(memory string) []string {
	var out []string
	for _, l := range strings.Split(memory, "\n") {
		// Headings name files by absolute path: a file's own "## " lines
		// are not files.
		if p, ok := strings.CutPrefix(l, "## "); ok && strings.HasPrefix(p, "/") {
			if i := strings.LastIndex(p, " ("); i > 0 {
				p = p[:i]
			}
			out = append(out, p)
		}
	}
	return out
}

func quarter(n int) int { return int(math.Ceil(float64(n) / 4)) }

// contextReport is /context.
func (u *ui) contextReport() string {
	req := u.lastReq.Load()
	if req == nil {
		return u.st.Dim("no request yet: /context shows what the model is sent once a message has been sent")
	}
	parts := contextParts(req)
	total := 0
	for _, p := range parts {
		total += p.tokens
	}
	var b strings.Builder
	head := fmt.Sprintf("Context of the last request: ~%s tokens", fmtTokens(total))
	if w := u.contextWindow(); w > 0 {
		head += fmt.Sprintf(" of %s (%d%%)", fmtTokens(w), total*100/w)
	}
	b.WriteString(u.st.Bold(head) + "\n")
	for _, p := range parts {
		pct := 0
		if total > 0 {
			pct = p.tokens * 100 / total
		}
		line := fmt.Sprintf("  %-14s %8d tokens  %3d%%", p.name, p.tokens, pct)
		if p.detail != "" {
			line += u.st.Dim("  " + sanitize(p.detail))
		}
		b.WriteString(line + "\n")
	}
	fmt.Fprintf(&b, "  %-14s %8d tokens\n", "total", total)
	if used := u.tr.ContextUsed(); used > 0 {
		b.WriteString(u.st.Dim(fmt.Sprintf("  (estimated from the request's text; the provider counted %s for the conversation so far)", fmtTokens(used))) + "\n")
	}
	return b.String()
}

// statusReport is /status.
func (u *ui) statusReport() string {
	var b strings.Builder
	row := func(k, v string) { fmt.Fprintf(&b, "  %-16s %s\n", k, v) }
	// rows writes a list under one key, its first row keyed, or empty.
	rows := func(k string, vs []string, empty string) {
		if len(vs) == 0 {
			row(k, empty)
		}
		for i, v := range vs {
			if i > 0 {
				k = ""
			}
			row(k, v)
		}
	}
	b.WriteString(u.st.Bold("Status") + "\n")
	model := u.modelName()
	provider, _, _ := strings.Cut(model, "/")
	row("model", u.modelLabel())
	row("provider", provider)
	if c := u.cur.Load(); c != nil {
		row("session", string(c.sess.ID()))
	}
	row("directory", shortPath(u.cwd(), u.o.Env))
	mode := u.mode()
	if mode == "" {
		mode = "default (no permission layer)"
	}
	row("permission mode", mode)
	if s := u.sandboxPiece(); s != "" {
		row("sandbox", strings.TrimPrefix(ansi.Strip(s), "sandbox: "))
	}
	if c := u.contextPiece(); c != "" {
		row("context", strings.TrimPrefix(ansi.Strip(c), "context "))
	}
	if t := u.tr.ledger.costText(); t != "" {
		row("cost", t)
	}
	if u.app.MCP != nil {
		var servers []string
		for _, s := range u.app.MCP.Servers() {
			v := sanitize(s.Name) + " · " + string(s.State) + fmt.Sprintf(" · %d %s", len(s.Tools), plural(len(s.Tools), "tool", "tools"))
			if s.Error != "" {
				v += " · " + sanitize(firstLine(s.Error))
			}
			servers = append(servers, v)
		}
		rows("MCP servers", servers, "none configured")
	}
	if req := u.lastReq.Load(); req != nil {
		_, memory, _ := strings.Cut(req.System, memoryHeading)
		var files []string
		for _, f := range memoryFiles(memory) {
			files = append(files, shortPath(sanitize(f), u.o.Env))
		}
		rows("memory files", files, "none")
	} else {
		row("memory files", u.st.Dim("(known after the first request)"))
	}
	return b.String()
}
