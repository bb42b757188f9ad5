package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// wireRequest is the part of an OpenAI chat request /context accounts for,
// as the model received it (parameters kept byte for byte).
type wireRequest struct {
	Messages []struct {
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		ToolCalls []struct {
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

func quarterOf(s string) int { return int(math.Ceil(float64(len(s)) / 4)) }

// estimate applies the compactor's token rule (a quarter of the bytes of
// each text; 4 tokens of framing per block and per message, 4 more
// around a tool result) to the request the model received: its system
// text, its tools (built-in and mcp__ apart) and its messages (a tool
// message is a result block inside a message).
func (w wireRequest) estimate(t *testing.T) (system, tools, mcp, history int) {
	t.Helper()
	for _, tl := range w.Tools {
		n := quarterOf(tl.Function.Name) + quarterOf(tl.Function.Description) + quarterOf(string(tl.Function.Parameters))
		if strings.HasPrefix(tl.Function.Name, "mcp__") {
			mcp += n
		} else {
			tools += n
		}
	}
	for i, m := range w.Messages {
		var text string
		if len(m.Content) > 0 && string(m.Content) != "null" {
			if err := json.Unmarshal(m.Content, &text); err != nil {
				t.Fatalf("message %d's content is not a string: %s", i, m.Content)
			}
		}
		switch {
		case m.Role == "system" && i == 0:
			system = quarterOf(text)
			continue
		case m.Role == "tool":
			history += 4 + 4 + quarterOf(text) + 4
			continue
		}
		history += 4
		if text != "" {
			history += quarterOf(text) + 4
		}
		for _, c := range m.ToolCalls {
			history += quarterOf(c.Function.Name) + quarterOf(c.Function.Arguments) + 4
		}
	}
	return system, tools, mcp, history
}

// /context through the real binary: its parts (system prompt, tool
// schemas, memory files, MCP tools, history) are what the same token rule
// gives for the request the model last received — the system text, the
// tool list with an MCP server's tool, and a history holding an @
// attachment, a tool call and its result, a ! command's output and the
// answers — and they add up to the total shown. /status then names the
// model, provider, session, directory, mode, the MCP server and its state,
// and the memory file.
func TestContextAddsUpToTheRequestInTmux(t *testing.T) {
	f := newTermFixture(t, `[{"id":"m","contextWindow":100000}]`,
		chatTool("c1", "bash", map[string]string{"command": "echo tool-says-hi", "description": "Greet"}),
		chatText("The file has twelve lines.", 300, 20),
		chatText("Seen the shell output.", 400, 10),
	)
	mcpServer := ""
	srv, _ := filepath.Abs(filepath.Join("..", "mcp", "testdata", "resources.mjs"))
	if _, err := exec.LookPath("node"); err == nil {
		if _, err := os.Stat(filepath.Join("..", "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err == nil {
			mcpServer = "pinger"
			f.addSettings(t, fmt.Sprintf(`"mcpServers":{"pinger":{"command":"node","args":[%q,"none"]}}`, srv))
		}
	}
	if mcpServer == "" {
		t.Log("node or the npm MCP SDK is missing: no MCP server, so no MCP tools")
	}
	var src strings.Builder
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&src, "line %d of the file\n", i)
	}
	f.write(t, "main.go", src.String())
	f.write(t, "AGENTS.md", "Always answer in haiku.\n")
	tt := f.tmux(t, "--trust", "--allowedTools", "bash")
	tt.waitFor("local/m", "›")
	if mcpServer != "" {
		// The server's tool is in the first request once it is connected.
		tt.text("/status")
		tt.keys("Enter")
		tt.waitUntil(func(s string) bool {
			if strings.Contains(s, "pinger · connected · 1 tool") {
				return true
			}
			tt.text("/status")
			tt.keys("Enter")
			return false
		}, "the MCP server connected")
	}

	tt.text("explain @main.go")
	tt.keys("Enter")
	tt.waitFor("The file has twelve lines.")
	tt.text("!echo shell-says-hi")
	tt.keys("Enter")
	tt.waitFor("! echo shell-says-hi")
	tt.text("and now?")
	tt.keys("Enter")
	tt.waitFor("Seen the shell output.")
	if n := f.model.count(); n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}

	tt.text("/context")
	tt.keys("Enter")
	s := tt.waitFor("Context of the last request", "  total ")
	s = s[strings.LastIndex(s, "Context of the last request"):]
	parts := map[string]int{}
	for _, name := range []string{"system prompt", "tool schemas", "memory files", "MCP tools", "history", "total"} {
		var n int
		l := lineWith(s, "  "+name+" ")
		if _, err := fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), name)), "%d tokens", &n); err != nil {
			t.Fatalf("/context has no %s line: %q\n%s", name, l, s)
		}
		parts[name] = n
	}
	if sum := parts["system prompt"] + parts["tool schemas"] + parts["memory files"] + parts["MCP tools"] + parts["history"]; sum != parts["total"] {
		t.Fatalf("/context parts %v do not add up to the total", parts)
	}

	f.model.mu.Lock()
	raw := f.model.raw[len(f.model.raw)-1]
	f.model.mu.Unlock()
	var w wireRequest
	if err := json.Unmarshal(raw, &w); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"line 12 of the file", "tool-says-hi", "shell-says-hi", "and now?"} {
		if !strings.Contains(string(raw), want) {
			t.Fatalf("the last request lacks %q: %.3000s", want, raw)
		}
	}
	system, tools, mcp, history := w.estimate(t)
	// The system prompt and the memory files are one system text on the
	// wire: their two quarters round up apart, so they may be one over.
	if d := parts["system prompt"] + parts["memory files"] - system; d < 0 || d > 1 || parts["memory files"] == 0 {
		t.Errorf("/context's system prompt + memory files = %d+%d, the system text sent is %d", parts["system prompt"], parts["memory files"], system)
	}
	if parts["tool schemas"] != tools || tools == 0 {
		t.Errorf("/context's tool schemas %d, the tools sent %d", parts["tool schemas"], tools)
	}
	if parts["MCP tools"] != mcp || (mcpServer != "") != (mcp > 0) {
		t.Errorf("/context's MCP tools %d, the mcp__ tools sent %d", parts["MCP tools"], mcp)
	}
	// The wire joins a user message's text blocks into one string, which
	// dsh's rule counted block by block (4 of framing and up to 1 of
	// rounding each): the prompt and its attachment are two blocks, the !
	// command's context three (its envelope's opening and closing tags
	// around the output). So /context's history is 3×4 to 3×5 over the
	// wire's; every other message maps one to one.
	if d := parts["history"] - history; d < 12 || d > 15 {
		t.Errorf("/context's history %d, the messages sent %d (%d of them)", parts["history"], history, len(w.Messages)-1)
	}
	if t.Failed() {
		t.Fatalf("/context:\n%s\nrequest: %.4000s", s, raw)
	}

	// The first /status (before any request, when the MCP server was
	// awaited) is still on the screen and said the memory files were not
	// known yet: wait for a new block.
	shown := strings.Count(tt.screen(), "\nStatus\n")
	tt.text("/status")
	tt.keys("Enter")
	s = tt.waitUntil(func(s string) bool {
		i := strings.LastIndex(s, "\nStatus\n")
		return strings.Count(s, "\nStatus\n") > shown && strings.Contains(s[i:], "  memory files ")
	}, "a new /status block")
	s = s[strings.LastIndex(s, "Status"):]
	id := strings.Fields(lineWith(s, "  session "))
	want := []string{"  model            local/m", "  provider         local", "  permission mode  default", "  sandbox ", "  directory "}
	if mcpServer != "" {
		want = append(want, "  MCP servers      pinger · connected · 1 tool")
	}
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Fatalf("/status has no %q:\n%s", w, s)
		}
	}
	if len(id) != 2 || !strings.Contains(f.run(t, "sessions"), id[1]) {
		t.Fatalf("/status's session %v is not the session listed:\n%s", id, s)
	}
	if !strings.Contains(lineWith(s, "  memory files "), "AGENTS.md") {
		t.Fatalf("/status does not list the memory file:\n%s", s)
	}
	tt.text("/exit")
	tt.keys("Enter")
	tt.waitFor("DSH-EXITED:0")
}
