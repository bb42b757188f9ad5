package llm

import (
	"errors"

	"github.com/dshq/dsh/internal/jsonscan"
)

// decodeBlockFast decodes the block shapes dsh itself writes in one pass
// over data, without reflection: an object of the known variants' members,
// each once, spelled exactly, with string, boolean or (content) array
// values. Anything else — another block type, an unknown or repeated
// member, null, a number, malformed JSON — reports false, and the caller
// decodes data with encoding/json, which then gives the result or the error
// it always gave. So this path only has to be right about what it accepts;
// TestBlockFastDecodeAgreesWithEncodingJSON holds it to encoding/json's
// answer. (The scanner unescapes strings as encoding/json does.)
//
// Why: replaying a session and reading released payloads back decode every
// message's blocks, and encoding/json's reflection into wireBlock was the
// larger part of that.
func decodeBlockFast(data []byte) (Block, bool) {
	var s jsonscan.Scanner
	s.Reset(data)
	b, ok := decodeBlockFrom(&s)
	return b, ok && s.End() == nil
}

// Member bits, to refuse a repeated member (encoding/json keeps the last).
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

func decodeBlockFrom(s *jsonscan.Scanner) (Block, bool) {
	var b Block
	if s.Enter('{') != nil {
		return b, false
	}
	var seen int
	for first := true; ; first = false {
		key, more, err := s.NextKey(first)
		if err != nil {
			return b, false
		}
		if !more {
			break
		}
		var str *string
		bit := 0
		switch string(key) {
		case "type":
			bit, str = mType, (*string)(&b.Type)
		case "text":
			bit, str = mText, &b.Text
		case "signature":
			bit, str = mSignature, &b.Signature
		case "redacted":
			bit, str = mRedacted, &b.Redacted
		case "id":
			bit, str = mID, (*string)(&b.ID)
		case "name":
			bit, str = mName, &b.Name
		case "arguments":
			bit, str = mArguments, &b.Arguments
		case "toolCallId":
			bit, str = mToolCallID, (*string)(&b.ToolCallID)
		case "url":
			bit, str = mURL, &b.URL
		case "mimeType":
			bit, str = mMimeType, &b.MimeType
		case "cache":
			bit, str = mCache, &b.Cache
		case "content":
			bit = mContent
		case "isError":
			bit = mIsError
		default:
			return b, false // encoding/json may match it in another case
		}
		if seen&bit != 0 || s.Peek() == 'n' { // repeated, or null
			return b, false
		}
		seen |= bit
		switch bit {
		case mContent:
			if b.Content, err = decodeBlocksFrom(s); err != nil {
				return b, false
			}
		case mIsError:
			raw, err := s.Raw()
			switch {
			case err != nil:
				return b, false
			case string(raw) == "true":
				b.IsError = true
			case string(raw) != "false":
				return b, false
			}
		default:
			if s.Peek() != '"' {
				return b, false
			}
			if *str, err = s.OwnString(); err != nil {
				return b, false
			}
		}
	}
	switch b.Type {
	case BlockText, BlockReasoning, BlockToolCall, BlockToolResult, BlockImage:
		return b, true
	}
	return b, false // a plugin's block keeps its raw JSON, or no type: the general path
}

// errNotFast ends a content array the fast path does not take.
var errNotFast = errors.New("llm: not a block for the fast path")

// decodeBlocksFrom reads an array of blocks; [] is an empty, non-nil
// slice, as encoding/json makes it.
func decodeBlocksFrom(s *jsonscan.Scanner) ([]Block, error) {
	out := []Block{}
	err := s.Array(func() error {
		b, ok := decodeBlockFrom(s)
		if !ok {
			return errNotFast
		}
		out = append(out, b)
		return nil
	})
	return out, err
}
