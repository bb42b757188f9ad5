package llm

import (
	"strconv"
	"unicode/utf8"
)

// JSONAppender is implemented by hot-path values that encode themselves
// without reflection. Their output is valid JSON by construction, equal to
// what encoding/json would produce for the same value.
type JSONAppender interface {
	AppendJSON(dst []byte) []byte
}

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a JSON string, escaping like encoding/json
// (invalid UTF-8 becomes U+FFFD; <, >, & and U+2028/2029 are escaped).
func AppendJSONString(dst []byte, s string) []byte { return appendJSONString(dst, s, true) }

// AppendJSONStringNoHTML is AppendJSONString without escaping <, > and &,
// like an encoding/json Encoder with SetEscapeHTML(false): what dsh writes
// to session files.
func AppendJSONStringNoHTML(dst []byte, s string) []byte { return appendJSONString(dst, s, false) }

func appendJSONString(dst []byte, s string, html bool) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && (!html || (b != '<' && b != '>' && b != '&')) {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendJSON encodes the chunk in its wire shape (see MarshalJSON).
func (c Chunk) AppendJSON(dst []byte) []byte {
	switch c.Type {
	case ChunkTextDelta, ChunkReasoningDelta:
		dst = append(dst, `{"type":"`...)
		dst = append(dst, c.Type...)
		dst = append(dst, `","index":`...)
		dst = strconv.AppendInt(dst, int64(c.Index), 10)
		dst = append(dst, `,"text":`...)
		dst = AppendJSONString(dst, c.Text)
		if c.Signature != "" {
			dst = append(dst, `,"signature":`...)
			dst = AppendJSONString(dst, c.Signature)
		}
		return append(dst, '}')
	case ChunkToolCallDelta:
		dst = append(dst, `{"type":"tool-call-delta","index":`...)
		dst = strconv.AppendInt(dst, int64(c.Index), 10)
		dst = append(dst, `,"id":`...)
		dst = AppendJSONString(dst, string(c.ID))
		if c.Name != "" {
			dst = append(dst, `,"name":`...)
			dst = AppendJSONString(dst, c.Name)
		}
		dst = append(dst, `,"argumentsDelta":`...)
		dst = AppendJSONString(dst, c.ArgsDelta)
		return append(dst, '}')
	case ChunkBlockStart:
		dst = append(dst, `{"type":"block-start","index":`...)
		dst = strconv.AppendInt(dst, int64(c.Index), 10)
		dst = append(dst, `,"blockType":`...)
		dst = AppendJSONString(dst, string(c.BlockType))
		return append(dst, '}')
	case ChunkUsage:
		if c.Usage == nil {
			break
		}
		dst = append(dst, `{"type":"usage","usage":`...)
		return append(c.Usage.AppendJSON(dst), '}')
	case ChunkFinish:
		if c.Finish == nil {
			break
		}
		dst = append(dst, `{"type":"finish","reason":{"kind":`...)
		dst = AppendJSONString(dst, c.Finish.Kind)
		if c.Finish.Message != "" {
			dst = append(dst, `,"message":`...)
			dst = AppendJSONString(dst, c.Finish.Message)
		}
		if c.Finish.Code != "" {
			dst = append(dst, `,"code":`...)
			dst = AppendJSONString(dst, c.Finish.Code)
		}
		return append(dst, '}', '}')
	case ChunkBlockEnd:
		if c.Block == nil || !c.Block.fast() {
			break
		}
		dst = append(dst, `{"type":"block-end","index":`...)
		dst = strconv.AppendInt(dst, int64(c.Index), 10)
		dst = append(dst, `,"block":`...)
		return append(c.Block.AppendJSON(dst), '}')
	}
	b, err := c.MarshalJSON()
	if err != nil {
		// Only a block-end without a block fails; encode it as null block
		// so the log stays valid JSON and the assembler reports it.
		return append(dst, `{"type":"block-end","index":0,"block":null}`...)
	}
	return append(dst, b...)
}

// AppendJSON encodes usage like encoding/json does.
func (u Usage) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"inputTokens":`...)
	dst = strconv.AppendInt(dst, int64(u.InputTokens), 10)
	dst = append(dst, `,"outputTokens":`...)
	dst = strconv.AppendInt(dst, int64(u.OutputTokens), 10)
	for _, f := range [...]struct {
		name string
		v    int
	}{{"cacheReadTokens", u.CacheReadTokens}, {"cacheWriteTokens", u.CacheWriteTokens}, {"reasoningTokens", u.ReasoningTokens}} {
		if f.v != 0 {
			dst = append(dst, ',', '"')
			dst = append(dst, f.name...)
			dst = append(dst, '"', ':')
			dst = strconv.AppendInt(dst, int64(f.v), 10)
		}
	}
	return append(dst, '}')
}

// fast reports whether AppendJSON encodes the block without reflection.
func (b *Block) fast() bool {
	switch b.Type {
	case BlockText, BlockReasoning, BlockToolCall:
		return true
	}
	return false
}

// AppendJSON encodes text, reasoning and tool-call blocks like MarshalJSON;
// other variants fall back to it.
func (b Block) AppendJSON(dst []byte) []byte {
	switch b.Type {
	case BlockText, BlockReasoning:
		dst = append(dst, `{"type":`...)
		dst = AppendJSONString(dst, string(b.Type))
		dst = append(dst, `,"text":`...)
		dst = AppendJSONString(dst, b.Text)
		if b.Type == BlockReasoning {
			if b.Signature != "" {
				dst = append(dst, `,"signature":`...)
				dst = AppendJSONString(dst, b.Signature)
			}
			if b.Redacted != "" {
				dst = append(dst, `,"redacted":`...)
				dst = AppendJSONString(dst, b.Redacted)
			}
		} else if b.Cache != "" {
			dst = append(dst, `,"cache":`...)
			dst = AppendJSONString(dst, b.Cache)
		}
		return append(dst, '}')
	case BlockToolCall:
		dst = append(dst, `{"type":"tool-call","id":`...)
		dst = AppendJSONString(dst, string(b.ID))
		dst = append(dst, `,"name":`...)
		dst = AppendJSONString(dst, b.Name)
		dst = append(dst, `,"arguments":`...)
		dst = AppendJSONString(dst, b.Arguments)
		return append(dst, '}')
	}
	raw, err := b.MarshalJSON()
	if err != nil {
		return append(dst, `null`...)
	}
	return append(dst, raw...)
}
