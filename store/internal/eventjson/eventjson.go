// Package eventjson is the one canonical JSON encoding of session events
// that both storage backends write (a JSONL line, an SQLite row), and a
// fast decoder for exactly that shape. Anything else that is valid JSON is
// handed to encoding/json, so the fast path is an optimisation, never a
// second dialect (FuzzParse keeps the two in agreement).
package eventjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/internal/jsonv"
)

// AppendEvent writes one event line (with its newline). Data must be a JSON
// value; it is copied verbatim unless it contains line breaks, which are
// compacted away so one event is always one line.
func AppendEvent(buf []byte, e session.Event) ([]byte, error) {
	buf, err := e.AppendJSON(buf) // fails only when Data is not JSON
	if err != nil {
		return buf, fmt.Errorf("event %q carries non-JSON-serializable data (seq %d): %w", e.Type, e.Seq, store.ErrNotJSON)
	}
	return append(buf, '\n'), nil
}

// AppendString writes s as a JSON string (no HTML escaping; invalid UTF-8
// becomes U+FFFD, as encoding/json does).
func AppendString(buf []byte, s string) []byte { return llm.AppendJSONStringNoHTML(buf, s) }

// Parse decodes one line (without its newline). ok is false for a line
// that is not an event: not JSON, not an object, no type, or no data.
// Data aliases line.
func Parse(line []byte) (e session.Event, ok bool) {
	if e, res := fastEvent(line); res == fastOK {
		return e, true
	} else if res == fastBad {
		return session.Event{}, false
	}
	return ParseSlow(line)
}

// ParseSlow is Parse by encoding/json alone.
func ParseSlow(line []byte) (session.Event, bool) {
	var e session.Event
	if err := json.Unmarshal(line, &e); err != nil || e.Type == "" || e.Data == nil {
		return session.Event{}, false
	}
	return e, true
}

type fastResult int

const (
	fastOK       fastResult = iota
	fastBad                 // definitely not an event (encoding/json agrees)
	fastFallback            // not the canonical shape: ask encoding/json
)

// Lexer reads JSON tokens from B at I.
type Lexer struct {
	B []byte
	I int
}

// Peek returns the next byte, or 0 at the end.
func (l *Lexer) Peek() byte {
	if l.I < len(l.B) {
		return l.B[l.I]
	}
	return 0
}

// PlainString reads a string without escapes or non-ASCII bytes.
func (l *Lexer) PlainString() ([]byte, bool) {
	if l.Peek() != '"' {
		return nil, false
	}
	start := l.I + 1
	for j := start; j < len(l.B); j++ {
		c := l.B[j]
		if c == '"' {
			l.I = j + 1
			return l.B[start:j], true
		}
		if c < 0x20 || c == '\\' || c >= utf8.RuneSelf {
			return nil, false
		}
	}
	return nil, false
}

// Integer reads -?(0|[1-9][0-9]*) that fits an int64 and is not followed by
// a fraction or exponent.
func (l *Lexer) Integer() (int64, bool) {
	b := l.B
	j := l.I
	neg := false
	if j < len(b) && b[j] == '-' {
		neg = true
		j++
	}
	start := j
	if j >= len(b) || b[j] < '0' || b[j] > '9' {
		return 0, false
	}
	var n uint64
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		n = n*10 + uint64(b[j]-'0')
		j++
	}
	digits := j - start
	if digits > 1 && b[start] == '0' {
		return 0, false // leading zero: not JSON
	}
	if j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E') {
		return 0, false
	}
	if digits > 18 {
		// Might overflow: let strconv decide.
		v, err := strconv.ParseInt(string(b[l.I:j]), 10, 64)
		if err != nil {
			return 0, false
		}
		l.I = j
		return v, true
	}
	l.I = j
	if neg {
		return -int64(n), true
	}
	return int64(n), true
}

var (
	keyType    = []byte("type")
	keySeq     = []byte("seq")
	keyTime    = []byte("time")
	keyData    = []byte("data")
	keySources = []byte("sourceEventSeqs")
	keyOp      = []byte("surfaceOp")
	opAppend   = []byte(`"append"`)
)

// typeNames interns the event types so a load does not allocate one string
// per event.
var typeNames = map[string]string{}

func init() {
	for _, t := range []string{
		session.TypeTurnStart, session.TypeTurnEnd, session.TypeStepStart, session.TypeStepEnd,
		session.TypeUserMessage, session.TypePromptBlocked, session.TypeContextMessage,
		session.TypeAssistantChunk, session.TypeAssistantMessage, session.TypeToolCall,
		session.TypeToolResult, session.TypeSteeringMessage, session.TypeApprovalRequest,
		session.TypeApprovalAnswer, "todo/write", "compact/start", "compact/summary", "compact/end",
		"hook/invoked", "hook/result",
	} {
		typeNames[t] = t
	}
}

// Intern returns the shared string for a known event type.
func Intern(b []byte) string {
	if s, ok := typeNames[string(b)]; ok {
		return s
	}
	return string(b)
}

func fastEvent(line []byte) (session.Event, fastResult) {
	var e session.Event
	l := Lexer{B: line}
	if l.Peek() != '{' {
		return e, fastFallback
	}
	l.I++
	var seen uint8
	for {
		key, ok := l.PlainString()
		if !ok || l.Peek() != ':' {
			return e, fastFallback
		}
		l.I++
		var bit uint8
		switch {
		case bytes.Equal(key, keyType):
			bit = 1
			s, ok := l.PlainString()
			if !ok {
				return e, fastFallback
			}
			e.Type = Intern(s)
		case bytes.Equal(key, keySeq):
			bit = 2
			n, ok := l.Integer()
			if !ok {
				return e, fastFallback
			}
			e.Seq = n
		case bytes.Equal(key, keyTime):
			bit = 4
			n, ok := l.Integer()
			if !ok {
				return e, fastFallback
			}
			e.Time = n
		case bytes.Equal(key, keyData):
			bit = 8
			start := l.I
			if c := l.Peek(); c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				return e, fastFallback
			}
			switch jsonv.Skip(l.B, &l.I) {
			case jsonv.OK:
			case jsonv.Bad:
				return e, fastBad
			default:
				return e, fastFallback
			}
			e.Data = json.RawMessage(l.B[start:l.I:l.I])
		case bytes.Equal(key, keySources):
			bit = 16
			if l.Peek() != '[' {
				return e, fastFallback
			}
			l.I++
			seqs := make([]int64, 0, 4)
			if l.Peek() == ']' {
				l.I++
			} else {
				for {
					n, ok := l.Integer()
					if !ok {
						return e, fastFallback
					}
					seqs = append(seqs, n)
					if c := l.Peek(); c == ',' {
						l.I++
						continue
					} else if c == ']' {
						l.I++
						break
					}
					return e, fastFallback
				}
			}
			e.SourceEventSeqs = seqs
		case bytes.Equal(key, keyOp):
			bit = 32
			if !bytes.HasPrefix(l.B[l.I:], opAppend) {
				return e, fastFallback
			}
			l.I += len(opAppend)
			op := session.AppendOp
			e.SurfaceOp = &op
		default:
			return e, fastFallback
		}
		if seen&bit != 0 {
			return e, fastFallback // duplicate key: let encoding/json decide
		}
		seen |= bit
		switch l.Peek() {
		case ',':
			l.I++
			continue
		case '}':
			l.I++
		default:
			return e, fastFallback
		}
		break
	}
	if l.I != len(line) || seen&1 == 0 || seen&8 == 0 || e.Type == "" {
		return e, fastFallback
	}
	return e, fastOK
}

// Str reads a JSON string; escapes and non-ASCII are handled exactly as
// encoding/json does (by asking it, for that one token).
func (l *Lexer) Str() (string, bool) {
	if l.Peek() != '"' {
		return "", false
	}
	start := l.I
	plain := true
	for j := start + 1; j < len(l.B); j++ {
		c := l.B[j]
		if c == '"' {
			l.I = j + 1
			tok := l.B[start:l.I]
			if plain {
				return string(tok[1 : len(tok)-1]), true
			}
			if utf8.Valid(tok) && bytes.IndexByte(tok, '\\') < 0 {
				return string(tok[1 : len(tok)-1]), true
			}
			var s string
			if json.Unmarshal(tok, &s) != nil {
				return "", false
			}
			return s, true
		}
		if c == '\\' {
			plain = false
			j++
			continue
		}
		if c < 0x20 {
			return "", false
		}
		if c >= utf8.RuneSelf {
			plain = false
		}
	}
	return "", false
}

// Boolean reads true or false.
func (l *Lexer) Boolean() (bool, bool) {
	if bytes.HasPrefix(l.B[l.I:], []byte("true")) {
		l.I += 4
		return true, true
	}
	if bytes.HasPrefix(l.B[l.I:], []byte("false")) {
		l.I += 5
		return false, true
	}
	return false, false
}

// Object walks the members of an object, calling member for each key with
// the lexer positioned at the value; member reports whether it consumed
// the value.
func (l *Lexer) Object(member func(key []byte) bool) bool {
	if l.Peek() != '{' {
		return false
	}
	l.I++
	if l.Peek() == '}' {
		l.I++
		return true
	}
	for {
		key, ok := l.PlainString()
		if !ok || l.Peek() != ':' {
			return false
		}
		l.I++
		if !member(key) {
			return false
		}
		switch l.Peek() {
		case ',':
			l.I++
		case '}':
			l.I++
			return true
		default:
			return false
		}
	}
}
