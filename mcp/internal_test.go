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
	saved := map[string][]byte{}
	save := func(mime string, data []byte) (string, error) {
		p := "/state/" + mime
		saved[p] = data
		return p, nil
	}
	res := convertResult(&sdk.CallToolResult{
		Content: []sdk.Content{
			&sdk.TextContent{Text: `{"a":1}`},
			&sdk.AudioContent{MIMEType: "audio/wav", Data: []byte("RIFF")},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "img://1", MIMEType: "image/gif", Blob: []byte("GIF8")}},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "bin://1", MIMEType: "application/zip", Blob: []byte("PK")}},
			&sdk.ResourceLink{URI: "file:///x", Title: "X", Description: "the x file"},
		},
		StructuredContent: map[string]any{"a": 1},
	}, resultLimits{}, convertOptions{save: save})
	// Text blocks in a row become one, a blank line between them; an image
	// keeps its note (the file it was saved to) beside it.
	if len(res.Content) != 3 {
		t.Fatalf("content = %+v", res.Content)
	}
	if got, want := res.Content[0].Text, "{\"a\":1}\n\n[audio: audio/wav, 4 bytes, not shown]\n\n[resource: img://1] (image/gif)\n\n[image: image/gif, 4 bytes, saved to /state/image/gif]"; got != want {
		t.Errorf("text before the image:\n got %q\nwant %q", got, want)
	}
	if b := res.Content[1]; b.Type != llm.BlockImage || b.URL != "data:image/gif;base64,R0lGOA==" || string(saved["/state/image/gif"]) != "GIF8" {
		t.Errorf("embedded image = %+v (saved %q)", b, saved)
	}
	if got, want := res.Content[2].Text, "[resource: bin://1] (application/zip) binary data, 2 bytes, not shown\n\n[resource: file:///x] X: the x file"; got != want {
		t.Errorf("text after the image:\n got %q\nwant %q", got, want)
	}
	// Structured content is sent once: not when the result has text (which
	// mirrors it), unless the server's config asks; alone when there is
	// no text.
	withText := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "hi"}}, StructuredContent: []int{1, 2}}
	if r := convertResult(withText, resultLimits{}, convertOptions{}); llm.TextOf(r.Content) != "hi" {
		t.Errorf("structured with text = %+v", r.Content)
	}
	if r := convertResult(withText, resultLimits{}, convertOptions{structured: true}); llm.TextOf(r.Content) != "hi\n\n[1,2]" {
		t.Errorf("structured on request = %+v", r.Content)
	}
	if r := convertResult(&sdk.CallToolResult{StructuredContent: map[string]int{"n": 3}}, resultLimits{}, convertOptions{}); llm.TextOf(r.Content) != `{"n":3}` {
		t.Errorf("structured alone = %+v", r.Content)
	}
	if r := convertResult(&sdk.CallToolResult{IsError: true}, resultLimits{}, convertOptions{}); !r.IsError || !strings.Contains(llm.TextOf(r.Content), "without a message") {
		t.Errorf("empty error = %+v", r)
	}
	if r := convertResult(&sdk.CallToolResult{}, resultLimits{}, convertOptions{}); r.Content == nil || len(r.Content) != 0 || r.IsError {
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

// Results are bounded: text over all blocks (in characters, cut on a rune
// boundary, with a note), images over all images (the ones that do not fit
// become a note).
func TestConvertResultLimits(t *testing.T) {
	res := convertResult(&sdk.CallToolResult{Content: []sdk.Content{
		&sdk.TextContent{Text: strings.Repeat("é", 6)},
		&sdk.ImageContent{MIMEType: "image/png", Data: make([]byte, 600)},
		&sdk.TextContent{Text: "abcdef"},
		&sdk.ImageContent{MIMEType: "image/jpeg", Data: make([]byte, 500)},
		&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "img://1", MIMEType: "image/gif", Blob: make([]byte, 400)}},
		&sdk.TextContent{Text: "dropped"},
	}}, resultLimits{text: 10, image: 1000}, convertOptions{})
	var texts []string
	images := 0
	for _, b := range res.Content {
		switch b.Type {
		case llm.BlockImage:
			images++
		case llm.BlockText:
			texts = append(texts, b.Text)
		}
	}
	if images != 2 {
		t.Errorf("%d images kept, want 2 (the png and the gif fit in 1000 bytes)", images)
	}
	// 6 + 4 characters of the server's text fit; dsh's own notes are kept.
	if len(texts) != 3 || texts[0] != strings.Repeat("é", 6)+"\n\n[image: image/png, 600 bytes, not saved]" ||
		!strings.HasPrefix(texts[1], "abcd\n\n[image: image/jpeg, 500 bytes, not shown: the images of one MCP tool result are limited to 1,000 bytes in all]\n\n[resource: img://1] (image/gif)") {
		t.Fatalf("texts = %q", texts)
	}
	note := texts[2]
	for _, want := range []string{"was cut: 9 of its 19 characters", "the full result was not kept", "limited to 10 characters"} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q lacks %q", note, want)
		}
	}
	// Within bounds nothing changes.
	small := convertResult(&sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "hi"}}}, resultLimits{text: 2, image: 1}, convertOptions{})
	if len(small.Content) != 1 || small.Content[0].Text != "hi" {
		t.Errorf("small = %+v", small.Content)
	}
}
