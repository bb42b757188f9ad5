package mcp

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/tool"
)

// ToolName returns the registry name of a server's tool:
// mcp__<server>__<tool>, each part reduced to letters, digits, '_' and '-'
// (other characters become '_'), as Claude Code names them — so permission
// rules written for Claude Code match.
func ToolName(server, name string) string {
	return "mcp__" + toolPart(server) + "__" + toolPart(name)
}

// toolPart keeps [A-Za-z0-9_-] and replaces anything else with '_'. A
// result with no letter or digit is empty.
func toolPart(s string) string {
	var b strings.Builder
	alnum := false
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			alnum = true
			b.WriteRune(r)
		case r == '_' || r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if !alnum {
		return ""
	}
	return b.String()
}

// maxDescription bounds a tool description shown to the model.
const maxDescription = 2048

// toolInfo maps a server's tool definition onto the registry's Info.
func toolInfo(server string, t *sdk.Tool) tool.Info {
	desc := strings.TrimSpace(t.Description)
	if desc == "" {
		desc = t.Title
	}
	if desc == "" && t.Annotations != nil {
		desc = t.Annotations.Title
	}
	if len(desc) > maxDescription {
		desc = truncateUTF8(desc, maxDescription) + "…"
	}
	readOnly := t.Annotations != nil && t.Annotations.ReadOnlyHint
	return tool.Info{
		Name:        ToolName(server, t.Name),
		Description: desc,
		Parameters:  inputSchema(t.InputSchema),
		Kind:        tool.KindOther,
		ReadOnly:    readOnly,
		Concurrent:  readOnly,
	}
}

func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n]
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// inputSchema normalizes a server's input schema: an object schema
// without the "$schema" meta key (some providers reject it). A missing or
// non-object schema becomes an open object.
func inputSchema(v any) json.RawMessage {
	open := json.RawMessage(`{"type":"object","properties":{}}`)
	if r, ok := v.(rawSchema); ok && len(r) > 0 {
		return json.RawMessage(r)
	}
	if v == nil {
		return open
	}
	b, err := json.Marshal(v)
	if err != nil {
		return open
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil || m == nil {
		return open
	}
	delete(m, "$schema")
	if _, ok := m["type"]; !ok {
		m["type"] = json.RawMessage(`"object"`)
	}
	out, err := json.Marshal(m)
	if err != nil {
		return open
	}
	return out
}

// rawSchema is an input schema inputSchema already normalized (read from
// the cache); it is used as is.
type rawSchema json.RawMessage

// MarshalJSON writes the schema itself.
func (r rawSchema) MarshalJSON() ([]byte, error) {
	if len(r) == 0 {
		return []byte("null"), nil
	}
	return r, nil
}

// convertResult maps an MCP tool result onto dsh content: text stays text,
// images become image blocks with data URLs, resource links and embedded
// resources become text naming their URI, audio is described, and
// structured content is added as JSON text when the text content does not
// already carry it. isError marks the result as a tool error.
func convertResult(res *sdk.CallToolResult) tool.Result {
	out := tool.Result{IsError: res.IsError}
	var texts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			out.Content = append(out.Content, llm.Text(c.Text))
			texts = append(texts, c.Text)
		case *sdk.ImageContent:
			mime := c.MIMEType
			if mime == "" {
				mime = "image/png"
			}
			out.Content = append(out.Content, llm.Block{Type: llm.BlockImage, MimeType: mime,
				URL: "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(c.Data)})
		case *sdk.AudioContent:
			out.Content = append(out.Content, llm.Text(fmt.Sprintf("[audio: %s, %d bytes, not shown]", orUnknown(c.MIMEType), len(c.Data))))
		case *sdk.ResourceLink:
			out.Content = append(out.Content, llm.Text(resourceLinkText(c)))
		case *sdk.EmbeddedResource:
			out.Content = append(out.Content, embeddedResource(c.Resource)...)
		default:
			b, err := json.Marshal(c)
			if err == nil {
				out.Content = append(out.Content, llm.Text(string(b)))
			}
		}
	}
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil && !carriesJSON(texts, b) {
			out.Content = append(out.Content, llm.Text(string(b)))
		}
	}
	if out.Content == nil {
		out.Content = []llm.Block{}
		if out.IsError {
			out.Content = []llm.Block{llm.Text("Error: the MCP tool failed without a message")}
		}
	}
	return out
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown type"
	}
	return s
}

func resourceLinkText(c *sdk.ResourceLink) string {
	var b strings.Builder
	b.WriteString("[resource: ")
	b.WriteString(c.URI)
	b.WriteString("]")
	name := c.Title
	if name == "" {
		name = c.Name
	}
	if name != "" {
		b.WriteString(" " + name)
	}
	if c.MIMEType != "" {
		b.WriteString(" (" + c.MIMEType + ")")
	}
	if c.Description != "" {
		b.WriteString(": " + c.Description)
	}
	return b.String()
}

func embeddedResource(r *sdk.ResourceContents) []llm.Block {
	if r == nil {
		return nil
	}
	head := "[resource: " + r.URI + "]"
	if r.MIMEType != "" {
		head += " (" + r.MIMEType + ")"
	}
	switch {
	case r.Blob != nil && strings.HasPrefix(r.MIMEType, "image/"):
		return []llm.Block{llm.Text(head), {Type: llm.BlockImage, MimeType: r.MIMEType,
			URL: "data:" + r.MIMEType + ";base64," + base64.StdEncoding.EncodeToString(r.Blob)}}
	case r.Blob != nil:
		return []llm.Block{llm.Text(fmt.Sprintf("%s binary data, %d bytes, not shown", head, len(r.Blob)))}
	}
	return []llm.Block{llm.Text(head + "\n" + r.Text)}
}

// carriesJSON reports whether one of the texts is the same JSON value as b
// (servers usually mirror structured content as text).
func carriesJSON(texts []string, b []byte) bool {
	var want any
	if json.Unmarshal(b, &want) != nil {
		return false
	}
	wb, _ := json.Marshal(want)
	for _, t := range texts {
		var got any
		if json.Unmarshal([]byte(t), &got) != nil {
			continue
		}
		gb, _ := json.Marshal(got)
		if string(gb) == string(wb) {
			return true
		}
	}
	return false
}
