package llm

import (
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// decodeBlockFast decodes the block shapes dsh itself writes in one pass
// over data, without reflection: an object of the known variants' members,
// each once, spelled exactly, with string, boolean or (content) array
// values. Anything else — another block type, an unknown or repeated
// member, null, a number, a member name with escapes, malformed JSON —
// reports false, and the caller decodes data with encoding/json, which
// then gives the result or the error it always gave. So this path only has
// to be right about what it accepts; TestBlockFastDecodeAgreesWithEncodingJSON
// holds it to encoding/json's answer.
//
// Why: replaying a session and reading released payloads back decode every
// message's blocks, and encoding/json's reflection into wireBlock was the
// larger part of that.
func decodeBlockFast(data []byte) (Block, bool) {
	d := blockLexer{b: data}
	b, ok := d.block()
	if !ok {
		return Block{}, false
	}
	d.space()
	return b, d.i == len(d.b)
}

type blockLexer struct {
	b     []byte
	i     int
	depth int // of nested content arrays, bounded well below encoding/json's limit
}

func (d *blockLexer) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// next skips white space and consumes c.
func (d *blockLexer) next(c byte) bool {
	d.space()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

func (d *blockLexer) peek() byte {
	d.space()
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

// Member bits, to refuse a repeated member.
const (
	mType = 1 << iota
	mText
	mSignature
	mRedacted
	mID
	mName
	mArguments
	mToolCallID
	mContent
	mIsError
	mURL
	mMimeType
	mCache
)

func (d *blockLexer) block() (Block, bool) {
	var b Block
	if !d.next('{') {
		return b, false
	}
	var seen int
	if d.next('}') {
		return b, false // no type: encoding/json's path says so
	}
	for {
		key, ok := d.plainKey()
		if !ok || !d.next(':') {
			return b, false
		}
		var bit int
		switch string(key) {
		case "type":
			bit = mType
		case "text":
			bit = mText
		case "signature":
			bit = mSignature
		case "redacted":
			bit = mRedacted
		case "id":
			bit = mID
		case "name":
			bit = mName
		case "arguments":
			bit = mArguments
		case "toolCallId":
			bit = mToolCallID
		case "content":
			bit = mContent
		case "isError":
			bit = mIsError
		case "url":
			bit = mURL
		case "mimeType":
			bit = mMimeType
		case "cache":
			bit = mCache
		default:
			return b, false
		}
		if seen&bit != 0 {
			return b, false
		}
		seen |= bit
		switch bit {
		case mContent:
			if b.Content, ok = d.blocks(); !ok {
				return b, false
			}
		case mIsError:
			if b.IsError, ok = d.boolean(); !ok {
				return b, false
			}
		default:
			s, ok := d.str()
			if !ok {
				return b, false
			}
			switch bit {
			case mType:
				b.Type = BlockType(s)
			case mText:
				b.Text = s
			case mSignature:
				b.Signature = s
			case mRedacted:
				b.Redacted = s
			case mID:
				b.ID = CallID(s)
			case mName:
				b.Name = s
			case mArguments:
				b.Arguments = s
			case mToolCallID:
				b.ToolCallID = CallID(s)
			case mURL:
				b.URL = s
			case mMimeType:
				b.MimeType = s
			case mCache:
				b.Cache = s
			}
		}
		if d.next('}') {
			break
		}
		if !d.next(',') {
			return b, false
		}
	}
	switch b.Type {
	case BlockText, BlockReasoning, BlockToolCall, BlockToolResult, BlockImage:
		return b, true
	}
	return b, false // a plugin's block keeps its raw JSON: the general path
}

// blocks reads an array of blocks; [] is an empty, non-nil slice, as
// encoding/json makes it.
func (d *blockLexer) blocks() ([]Block, bool) {
	if d.depth++; d.depth > 64 || !d.next('[') {
		return nil, false
	}
	defer func() { d.depth-- }()
	out := []Block{}
	if d.next(']') {
		return out, true
	}
	for {
		b, ok := d.block()
		if !ok {
			return nil, false
		}
		out = append(out, b)
		if d.next(']') {
			return out, true
		}
		if !d.next(',') {
			return nil, false
		}
	}
}

func (d *blockLexer) boolean() (bool, bool) {
	d.space()
	rest := d.b[d.i:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		d.i += 4
		return true, true
	case len(rest) >= 5 && string(rest[:5]) == "false":
		d.i += 5
		return false, true
	}
	return false, false
}

// plainKey reads a member name without escapes (encoding/json matches
// names case-insensitively and after unescaping; such names go to it).
func (d *blockLexer) plainKey() ([]byte, bool) {
	if !d.next('"') {
		return nil, false
	}
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return d.b[start : d.i-1], true
		case c == '\\' || c < 0x20:
			return nil, false
		}
		d.i++
	}
	return nil, false
}

// str reads a JSON string the way encoding/json unquotes one: escapes
// decoded, an unpaired surrogate and each invalid UTF-8 byte become U+FFFD;
// a control character or a bad escape is malformed (false).
func (d *blockLexer) str() (string, bool) {
	if !d.next('"') {
		return "", false
	}
	start := d.i
	// The common case: no escapes and valid UTF-8, one copy.
	for d.i < len(d.b) {
		c := d.b[d.i]
		if c == '"' {
			s := d.b[start:d.i]
			d.i++
			if utf8.Valid(s) {
				return string(s), true
			}
			d.i = start
			break
		}
		if c == '\\' || c < 0x20 {
			break
		}
		d.i++
	}
	if !utf8.Valid(d.b[start:d.i]) {
		d.i = start // the prefix is copied as is only when it is valid
	}
	// The decoded string is no longer than its quoted form up to the
	// closing quote (escapes shrink; U+FFFD for an invalid byte is the
	// exception, and append grows for it).
	end := d.i
	for end < len(d.b) && d.b[end] != '"' {
		if d.b[end] == '\\' {
			end++
		}
		end++
	}
	buf := make([]byte, 0, min(end, len(d.b))-start)
	buf = append(buf, d.b[start:d.i]...)
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			if len(buf) == 0 {
				return "", true
			}
			// buf is never written again: the string shares it, as
			// strings.Builder's does, instead of copying it.
			return unsafe.String(unsafe.SliceData(buf), len(buf)), true
		case c < 0x20:
			return "", false
		case c == '\\':
			if d.i+1 >= len(d.b) {
				return "", false
			}
			e := d.b[d.i+1]
			d.i += 2
			switch e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := d.hex4()
				if !ok {
					return "", false
				}
				if utf16.IsSurrogate(r) {
					// A pair only if a \u escape of a low surrogate
					// follows; else this one alone is U+FFFD and what
					// follows is read on its own.
					save := d.i
					if d.i+1 < len(d.b) && d.b[d.i] == '\\' && d.b[d.i+1] == 'u' {
						d.i += 2
						r2, ok := d.hex4()
						if !ok {
							return "", false
						}
						if dec := utf16.DecodeRune(r, r2); dec != unicode.ReplacementChar {
							buf = utf8.AppendRune(buf, dec)
							continue
						}
					}
					d.i = save
					r = unicode.ReplacementChar
				}
				buf = utf8.AppendRune(buf, r)
			default:
				return "", false
			}
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			d.i++
		default:
			r, size := utf8.DecodeRune(d.b[d.i:])
			d.i += size
			buf = utf8.AppendRune(buf, r) // an invalid byte is U+FFFD, size 1
		}
	}
	return "", false
}

func (d *blockLexer) hex4() (rune, bool) {
	if d.i+4 > len(d.b) {
		return 0, false
	}
	var r rune
	for _, c := range d.b[d.i : d.i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r*16 + rune(c)
	}
	d.i += 4
	return r, true
}
