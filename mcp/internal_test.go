package mcp

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dshq/dsh/llm"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"HOME": "/home/u", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	for in, want := range map[string]string{
		"plain":                   "plain",
		"${HOME}/x":               "/home/u/x",
		"a${HOME}b${HOME}":        "a/home/ub/home/u",
		"${NOPE:-fallback}":       "fallback",
		"${EMPTY:-d}":             "d",
		"${EMPTY}":                "",
		"unterminated ${HOME":     "unterminated ${HOME",
		"Bearer ${HOME:-unused}!": "Bearer /home/u!",
	} {
		got, err := expand(in, lookup)
		if err != nil || got != want {
			t.Errorf("expand(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := expand("${MISSING}", lookup); err == nil || !strings.Contains(err.Error(), "MISSING is not set") {
		t.Errorf("missing variable: %v", err)
	}
	c := ServerConfig{Name: "s", Command: "${HOME}/bin/srv", Args: []string{"--token=${NOPE:-t}"}, Env: map[string]string{"A": "${HOME}"},
		URL: "", Headers: map[string]string{"X": "${EMPTY:-h}"}}
	x, err := c.expanded(lookup)
	if err != nil || x.Command != "/home/u/bin/srv" || x.Args[0] != "--token=t" || x.Env["A"] != "/home/u" || x.Headers["X"] != "h" || c.Env["A"] != "${HOME}" {
		t.Errorf("expanded = %+v, %v (original %+v)", x, err, c)
	}
}

func TestConvertResult(t *testing.T) {
	res := convertResult(&sdk.CallToolResult{
		Content: []sdk.Content{
			&sdk.TextContent{Text: `{"a":1}`},
			&sdk.AudioContent{MIMEType: "audio/wav", Data: []byte("RIFF")},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "img://1", MIMEType: "image/gif", Blob: []byte("GIF8")}},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "bin://1", MIMEType: "application/zip", Blob: []byte("PK")}},
			&sdk.ResourceLink{URI: "file:///x", Title: "X", Description: "the x file"},
		},
		StructuredContent: map[string]any{"a": 1},
	})
	want := []string{`{"a":1}`, "[audio: audio/wav, 4 bytes, not shown]", "[resource: img://1] (image/gif)", "",
		"[resource: bin://1] (application/zip) binary data, 2 bytes, not shown", "[resource: file:///x] X: the x file"}
	if len(res.Content) != len(want) {
		t.Fatalf("content = %+v", res.Content)
	}
	for i, w := range want {
		b := res.Content[i]
		if i == 3 {
			if b.Type != llm.BlockImage || b.URL != "data:image/gif;base64,R0lGOA==" {
				t.Errorf("embedded image = %+v", b)
			}
			continue
		}
		if b.Type != llm.BlockText || b.Text != w {
			t.Errorf("block %d = %+v, want %q", i, b, w)
		}
	}
	// Structured content mirrored as text is not repeated; otherwise it is
	// added as JSON.
	if r := convertResult(&sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "hi"}}, StructuredContent: []int{1, 2}}); llm.TextOf(r.Content) != "hi[1,2]" {
		t.Errorf("structured = %+v", r.Content)
	}
	if r := convertResult(&sdk.CallToolResult{IsError: true}); !r.IsError || !strings.Contains(llm.TextOf(r.Content), "without a message") {
		t.Errorf("empty error = %+v", r)
	}
	if r := convertResult(&sdk.CallToolResult{}); r.Content == nil || len(r.Content) != 0 || r.IsError {
		t.Errorf("empty = %+v", r)
	}
}

func TestToolInfo(t *testing.T) {
	long := strings.Repeat("é", 3000)
	info := toolInfo("srv", &sdk.Tool{Name: "t", Description: long, InputSchema: map[string]any{"$schema": "http://json-schema.org/draft-07/schema#", "properties": map[string]any{}},
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}})
	if info.Name != "mcp__srv__t" || !info.ReadOnly || !info.Concurrent || len(info.Description) > maxDescription+len("…") || !strings.HasSuffix(info.Description, "…") {
		t.Errorf("info = %+v", info.Name)
	}
	if string(info.Parameters) != `{"properties":{},"type":"object"}` {
		t.Errorf("schema = %s", info.Parameters)
	}
	if p := inputSchema(nil); string(p) != `{"type":"object","properties":{}}` {
		t.Errorf("nil schema = %s", p)
	}
	if p := inputSchema(json.RawMessage(`[1]`)); string(p) != `{"type":"object","properties":{}}` {
		t.Errorf("array schema = %s", p)
	}
	if info := toolInfo("srv", &sdk.Tool{Name: "t", Title: "Title"}); info.Description != "Title" || info.ReadOnly {
		t.Errorf("title fallback = %+v", info)
	}
}

func TestCacheRoundTrip(t *testing.T) {
	home := t.TempDir()
	c := ServerConfig{Name: "srv one", Command: "node", Args: []string{"a.js"}}
	tools := []*sdk.Tool{{Name: "x", Description: "d", InputSchema: map[string]any{"type": "object"}, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}}
	if err := saveCache(home, c, tools, "instr", time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	e, err := loadCache(home, c)
	if err != nil || e == nil || len(e.Tools) != 1 || e.Tools[0].Name != "x" || !e.Tools[0].Annotations.ReadOnlyHint || e.Instructions != "instr" {
		t.Fatalf("cache = %+v, %v", e, err)
	}
	// Another command, same name: the cache does not apply.
	c2 := c
	c2.Args = []string{"b.js"}
	if e, err := loadCache(home, c2); e != nil || err != nil {
		t.Errorf("stale cache used: %+v, %v", e, err)
	}
	// Env and headers (secrets) do not change the fingerprint.
	c3 := c
	c3.Env = map[string]string{"TOKEN": "x"}
	if e, _ := loadCache(home, c3); e == nil {
		t.Error("env change invalidated the cache")
	}
}
