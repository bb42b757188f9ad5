package llm_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/dshq/dsh/llm"
	"pgregory.net/rapid"
)

// refBlock decodes a block by encoding/json alone, nested content too: the
// decoder llm.Block.UnmarshalJSON had before its fast path, kept as the oracle
// (its wire type has the same name, so encoding/json's errors read alike).
type refBlock struct{ b llm.Block }

type wireBlock struct {
	Type       llm.BlockType `json:"type"`
	Text       *string       `json:"text,omitempty"`
	Signature  string        `json:"signature,omitempty"`
	Redacted   string        `json:"redacted,omitempty"`
	ID         *llm.CallID   `json:"id,omitempty"`
	Name       *string       `json:"name,omitempty"`
	Arguments  *string       `json:"arguments,omitempty"`
	ToolCallID *llm.CallID   `json:"toolCallId,omitempty"`
	Content    *[]refBlock   `json:"content,omitempty"`
	IsError    *bool         `json:"isError,omitempty"`
	URL        *string       `json:"url,omitempty"`
	MimeType   string        `json:"mimeType,omitempty"`
	Cache      string        `json:"cache,omitempty"`
}

func (r *refBlock) UnmarshalJSON(data []byte) error {
	var w wireBlock
	if err := json.Unmarshal(data, &w); err != nil {
		return fmt.Errorf("llm: decoding content block: %w", err)
	}
	if w.Type == "" {
		return fmt.Errorf("llm: content block without a type")
	}
	b := llm.Block{Type: w.Type, Signature: w.Signature, Redacted: w.Redacted, MimeType: w.MimeType, Cache: w.Cache}
	set := func(dst *string, src *string) {
		if src != nil {
			*dst = *src
		}
	}
	set(&b.Text, w.Text)
	set(&b.Name, w.Name)
	set(&b.Arguments, w.Arguments)
	set(&b.URL, w.URL)
	if w.ID != nil {
		b.ID = *w.ID
	}
	if w.ToolCallID != nil {
		b.ToolCallID = *w.ToolCallID
	}
	if w.Content != nil {
		b.Content = make([]llm.Block, len(*w.Content))
		for i, c := range *w.Content {
			b.Content[i] = c.b
		}
	}
	if w.IsError != nil {
		b.IsError = *w.IsError
	}
	switch b.Type {
	case llm.BlockText, llm.BlockReasoning, llm.BlockToolCall, llm.BlockToolResult, llm.BlockImage:
	default:
		b.Raw = append(json.RawMessage(nil), bytes.TrimSpace(data)...)
	}
	r.b = b
	return nil
}

// texts are strings that exercise the unquoting: escapes, HTML characters
// (escaped by Marshal), non-ASCII, emoji (a surrogate pair when escaped),
// control characters and invalid UTF-8 (U+FFFD).
func genText(t *rapid.T, label string) string {
	parts := rapid.SliceOfN(rapid.SampledFrom([]string{
		"a", "hello world", "\n", "\t", `"`, `\`, "/", "<b>&amp;</b>", "é", "日本", "😀", "\x01", "\u2028",
		"\xff", "\xed\xa0\x80", string(rune(0xFFFD)), " ", "{}", "[1]",
	}), 0, 12).Draw(t, label)
	return strings.Join(parts, "")
}

func genBlock(t *rapid.T, depth int) llm.Block {
	types := []llm.BlockType{llm.BlockText, llm.BlockReasoning, llm.BlockToolCall, llm.BlockToolResult, llm.BlockImage}
	b := llm.Block{Type: rapid.SampledFrom(types).Draw(t, "type")}
	switch b.Type {
	case llm.BlockText:
		b.Text = genText(t, "text")
		b.Cache = rapid.SampledFrom([]string{"", llm.CacheEphemeral}).Draw(t, "cache")
	case llm.BlockReasoning:
		b.Text, b.Signature = genText(t, "text"), genText(t, "signature")
	case llm.BlockToolCall:
		b.ID, b.Name = llm.CallID(genText(t, "id")), genText(t, "name")
		b.Arguments = rapid.SampledFrom([]string{"", "{}", `{"command":"ls -la\n"}`, "not json"}).Draw(t, "args")
	case llm.BlockToolResult:
		b.ToolCallID = llm.CallID(genText(t, "callID"))
		b.IsError = rapid.Bool().Draw(t, "isError")
		if depth < 2 {
			n := rapid.IntRange(0, 3).Draw(t, "content")
			for range n {
				b.Content = append(b.Content, genBlock(t, depth+1))
			}
		}
	case llm.BlockImage:
		b.URL, b.MimeType = "data:image/png;base64,"+genText(t, "url"), "image/png"
	}
	return b
}

// A mutation of an encoded block: what a hand-written or damaged payload
// can look like, valid JSON or not.
func mutate(t *rapid.T, enc []byte) []byte {
	s := string(enc)
	switch rapid.IntRange(0, 14).Draw(t, "mutation") {
	case 0: // as written
	case 1: // white space around every token
		r := strings.NewReplacer(`":`, "\" :\n ", `,"`, " ,\t\"", "{", "{ ", "}", " }", "[", "[ ", "]", " ]")
		s = " " + r.Replace(s) + "\r\n"
	case 2: // cut anywhere
		s = s[:rapid.IntRange(0, len(s)).Draw(t, "cut")]
	case 3: // a byte replaced
		i := rapid.IntRange(0, max(len(s)-1, 0)).Draw(t, "at")
		if i < len(s) {
			s = s[:i] + string(rapid.SampledFrom([]byte(`{}[]":,\ x0tn`)).Draw(t, "byte")) + s[i+1:]
		}
	case 4: // an unknown member (encoding/json skips it)
		s = strings.Replace(s, "{", `{"extra":[1,{"a":null}],`, 1)
	case 5: // a repeated member (the last wins)
		s = strings.Replace(s, "{", `{"text":"first","type":"image",`, 1)
	case 6: // a member spelled in another case (encoding/json matches it)
		s = strings.Replace(s, `"text"`, `"Text"`, 1)
	case 7: // null values
		s = strings.Replace(s, `"isError":false`, `"isError":null`, 1)
		s = strings.Replace(s, `"name":"`, `"name":null,"x":"`, 1)
	case 8: // a value of the wrong type
		s = strings.Replace(s, `"isError":`, `"isError":"yes","y":`, 1)
		s = strings.Replace(s, `"text":"`, `"text":5,"z":"`, 1)
	case 9: // trailing data
		s += rapid.SampledFrom([]string{"x", "{}", " ,", "\x00"}).Draw(t, "trailing")
	case 10: // a plugin's block type
		s = strings.Replace(s, `"type":"`, `"type":"plugin-`, 1)
	case 11: // no type, or an empty one
		s = strings.Replace(s, `"type":"`, `"kind":"`, 1)
	case 12: // escapes in a member name
		s = strings.Replace(s, `"type"`, `"typ\u0065"`, 1)
	case 13: // lone and paired surrogates, bad escapes
		esc := rapid.SampledFrom([]string{`\ud83d\ude00`, `\ud83d`, `\ude00x`, `\ud83d\u0041`, `\u00e9`, `\u12`, `\x`, `\ud83d\`}).Draw(t, "esc")
		s = strings.Replace(s, `"text":"`, `"text":"`+esc, 1)
	case 14: // a raw control character in a string
		s = strings.Replace(s, `":"`, "\":\"\x01", 1)
	}
	return []byte(s)
}

// llm.Block.UnmarshalJSON's fast path gives exactly what encoding/json gives —
// the same block, or an error with the same message — on random blocks of
// every known variant (nested results too), as written, re-spaced, cut,
// damaged, and with the members and values only encoding/json understands.
func TestBlockFastDecodeAgreesWithEncodingJSON(t *testing.T) {
	var fast int
	rapid.Check(t, func(t *rapid.T) {
		b := genBlock(t, 0)
		enc, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		data := mutate(t, enc)
		var got llm.Block
		gotErr := got.UnmarshalJSON(data)
		var want refBlock
		wantErr := want.UnmarshalJSON(data)
		if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
			t.Fatalf("decoding %q: error %v, encoding/json says %v", data, gotErr, wantErr)
		}
		if gotErr == nil && !reflect.DeepEqual(got, want.b) {
			t.Fatalf("decoding %q:\n got %#v\nwant %#v", data, got, want.b)
		}
		if _, ok := llm.DecodeBlockFast(data); ok {
			fast++
		}
	})
	// The property says nothing if the fast path never runs.
	if fast == 0 {
		t.Fatal("no input took the fast path")
	}
}

func BenchmarkBlockDecode(b *testing.B) {
	out := strings.Repeat("total 48\ndrwxr-xr-x  2 root root 4096 Dec  3 \"x\" main.go\t<ok>\n", 300) // ~20 KB
	blocks := map[string]llm.Block{
		"text":        llm.Text(strings.Repeat("The change is small and the test shows it.\n", 20)),
		"tool-call":   llm.ToolCall("call_0123456789", "bash", `{"command":"ls -la /work && go test ./...","timeout":120}`),
		"tool-result": {Type: llm.BlockToolResult, ToolCallID: "call_0123456789", Content: []llm.Block{llm.Text(out)}},
	}
	for name, blk := range blocks {
		enc, err := json.Marshal(blk)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name+"/fast", func(b *testing.B) {
			b.SetBytes(int64(len(enc)))
			for b.Loop() {
				var x llm.Block
				if err := x.UnmarshalJSON(enc); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/encoding-json", func(b *testing.B) {
			b.SetBytes(int64(len(enc)))
			for b.Loop() {
				var x refBlock
				if err := x.UnmarshalJSON(enc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
