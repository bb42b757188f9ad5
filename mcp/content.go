package mcp

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

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

// resultLimits bound what one tool result brings into the session; a
// bound <= 0 is no bound.
type resultLimits struct {
	// text is the most characters of the server's text, over all blocks.
	text int
	// image is the most image bytes (decoded), over all images.
	image int
}

// budget spends a result's limits as its content is converted.
type budget struct {
	lim         resultLimits
	text, image int // left
	total, kept int // characters of text seen and kept
	save        func(mime string, data []byte) (string, error)
}

// take returns what of s fits in the text budget; ok is false when s had
// text and none of it fits.
func (b *budget) take(s string) (_ string, ok bool) {
	if b.lim.text <= 0 {
		return s, true
	}
	n := utf8.RuneCountInString(s)
	b.total += n
	if n <= b.text {
		b.text -= n
		b.kept += n
		return s, true
	}
	s = firstRunes(s, b.text)
	b.kept += b.text
	b.text = 0
	return s, s != ""
}

// imageBlocks returns an image, or a note when the image budget cannot
// hold it. A kept image comes with a short note naming the file it was
// saved to: a model that takes images sees both; one that does not (whose
// adapter leaves image blocks out) still learns there was one and where it
// is, instead of a page of base64.
func (b *budget) imageBlocks(mime string, data []byte) []llm.Block {
	if b.lim.image > 0 {
		if len(data) > b.image {
			return []llm.Block{llm.Text(fmt.Sprintf("[image: %s, %s bytes, not shown: the images of one MCP tool result are limited to %s bytes in all]",
				mime, thousands(len(data)), thousands(b.lim.image)))}
		}
		b.image -= len(data)
	}
	where := "not saved"
	if b.save != nil {
		if path, err := b.save(mime, data); err == nil {
			where = "saved to " + path
		} else {
			where = "not saved: " + err.Error()
		}
	}
	return []llm.Block{
		llm.Text(fmt.Sprintf("[image: %s, %s bytes, %s]", mime, thousands(len(data)), where)),
		{Type: llm.BlockImage, MimeType: mime, URL: "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data)},
	}
}

// cutNote says how much text was cut, or "" when nothing was.
func (b *budget) cutNote() string {
	if b.total <= b.kept {
		return ""
	}
	return fmt.Sprintf("\n[dsh: this MCP tool result was cut: %s of its %s characters of text were left out (results are limited to %s characters); "+
		"the full result was not kept. To see more, call the tool again asking for less (a range, a page, a filter).]",
		thousands(b.total-b.kept), thousands(b.total), thousands(b.lim.text))
}

// convertOptions say how to convert one server's results.
type convertOptions struct {
	// structured adds structured content even when the result has text.
	structured bool
	// save keeps an image in a file and returns its path (nil: not saved).
	save func(mime string, data []byte) (string, error)
}

// convertResult maps an MCP tool result onto dsh content: text stays text,
// images become image blocks with data URLs (each with a note naming the
// file it was saved to), resource links and embedded resources become text
// naming their URI, audio is described, and structured content is added as
// JSON text only when the result has no text (servers mirror it as text,
// and sending both doubles what the model reads) or the server's config
// asks for it. Adjacent text blocks are joined with a blank line, so
// adapters that concatenate a result's text do not run them together.
// isError marks the result as a tool error. The server's text beyond
// lim.text characters is cut, with a note saying how much; images beyond
// lim.image bytes are replaced by a note.
func convertResult(res *sdk.CallToolResult, lim resultLimits, opts convertOptions) tool.Result {
	out := tool.Result{IsError: res.IsError}
	b := &budget{lim: lim, text: lim.text, image: lim.image, save: opts.save}
	text := func(s string) {
		if s, ok := b.take(s); ok {
			out.Content = append(out.Content, llm.Text(s))
		}
	}
	var texts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			text(c.Text)
			texts = append(texts, c.Text)
		case *sdk.ImageContent:
			mime := c.MIMEType
			if mime == "" {
				mime = "image/png"
			}
			out.Content = append(out.Content, b.imageBlocks(mime, c.Data)...)
		case *sdk.AudioContent:
			out.Content = append(out.Content, llm.Text(fmt.Sprintf("[audio: %s, %d bytes, not shown]", orUnknown(c.MIMEType), len(c.Data))))
		case *sdk.ResourceLink:
			text(resourceLinkText(c))
		case *sdk.EmbeddedResource:
			out.Content = append(out.Content, embeddedResource(c.Resource, b)...)
		default:
			if j, err := json.Marshal(c); err == nil {
				text(string(j))
			}
		}
	}
	if res.StructuredContent != nil && (len(texts) == 0 || opts.structured) {
		if j, err := json.Marshal(res.StructuredContent); err == nil && !carriesJSON(texts, j) {
			text(string(j))
		}
	}
	out.Content = joinTexts(out.Content)
	if note := b.cutNote(); note != "" {
		out.Content = append(out.Content, llm.Text(note))
	}
	if out.Content == nil {
		out.Content = []llm.Block{}
		if out.IsError {
			out.Content = []llm.Block{llm.Text("Error: the MCP tool failed without a message")}
		}
	}
	return out
}

// joinTexts merges runs of adjacent text blocks into one, separated by a
// blank line.
func joinTexts(bs []llm.Block) []llm.Block {
	var out []llm.Block
	for _, b := range bs {
		if n := len(out); n > 0 && b.Type == llm.BlockText && out[n-1].Type == llm.BlockText {
			out[n-1].Text = strings.TrimRight(out[n-1].Text, "\n") + "\n\n" + b.Text
			continue
		}
		out = append(out, b)
	}
	return out
}

// firstRunes returns the first n runes of s.
func firstRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// thousands formats n with comma separators.
func thousands(n int) string {
	if n < 0 {
		return "-" + thousands(-n)
	}
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
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

func embeddedResource(r *sdk.ResourceContents, b *budget) []llm.Block {
	if r == nil {
		return nil
	}
	head := "[resource: " + r.URI + "]"
	if r.MIMEType != "" {
		head += " (" + r.MIMEType + ")"
	}
	switch {
	case r.Blob != nil && strings.HasPrefix(r.MIMEType, "image/"):
		return append([]llm.Block{llm.Text(head)}, b.imageBlocks(r.MIMEType, r.Blob)...)
	case r.Blob != nil:
		return []llm.Block{llm.Text(fmt.Sprintf("%s binary data, %d bytes, not shown", head, len(r.Blob)))}
	}
	if t, ok := b.take(head + "\n" + r.Text); ok {
		return []llm.Block{llm.Text(t)}
	}
	return nil
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
