// Package jsonscan is a validating JSON walker without reflection, for the
// hot decoders: the model adapters' stream events (through llm/sse) and
// package llm's content blocks.
package jsonscan

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Scanner walks one JSON document without reflection, so adapters can
// decode the one or two hundred bytes of a stream event in well under a
// microsecond and with no allocation beyond the strings they keep. It
// validates everything it reads or skips, like json.Unmarshal; strings are
// unescaped the same way (invalid UTF-8 and lone surrogates become U+FFFD).
// Keys match exactly (encoding/json would also accept other letter cases).
//
// Usage:
//
//	s.Reset(data)
//	if err := s.Enter('{'); err != nil { ... }
//	for first := true; ; first = false {
//		key, ok, err := s.NextKey(first)
//		if err != nil || !ok { ... }
//		switch string(key) {
//		case "text":
//			v, err := s.String()
//		default:
//			err = s.Skip()
//		}
//	}
//	err := s.End()
type Scanner struct {
	data  []byte
	pos   int
	depth int
	buf   []byte // scratch for escaped keys
	vbuf  []byte // scratch for escaped values
}

// maxJSONDepth bounds nesting (json.Unmarshal allows 10000).
const maxJSONDepth = 10000

// Reset starts scanning data.
func (s *Scanner) Reset(data []byte) {
	s.data, s.pos, s.depth = data, 0, 0
}

func (s *Scanner) errorf(format string, args ...any) error {
	return &SyntaxError{Offset: s.pos, Msg: fmt.Sprintf(format, args...)}
}

// SyntaxError reports invalid JSON.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at offset %d: %s", e.Offset, e.Msg)
}

func (s *Scanner) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *Scanner) unexpected() error {
	if s.pos >= len(s.data) {
		return s.errorf("unexpected end of input")
	}
	return s.errorf("unexpected %q", s.data[s.pos])
}

// Null consumes a null if one comes next.
func (s *Scanner) Null() bool {
	s.ws()
	if len(s.data)-s.pos >= 4 && string(s.data[s.pos:s.pos+4]) == "null" {
		s.pos += 4
		return true
	}
	return false
}

// Enter consumes the opening '{' or '[' of the next value.
func (s *Scanner) Enter(open byte) error {
	s.ws()
	if s.pos >= len(s.data) || s.data[s.pos] != open {
		return s.unexpected()
	}
	if s.depth++; s.depth > maxJSONDepth {
		return s.errorf("nesting too deep")
	}
	s.pos++
	return nil
}

// NextKey moves to the next member of the object being walked and returns
// its key (valid until the next call); ok is false at the closing brace.
// first is true for the first call after Enter.
func (s *Scanner) NextKey(first bool) (key []byte, ok bool, err error) {
	s.ws()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		s.depth--
		return nil, false, nil
	}
	if !first {
		if s.pos >= len(s.data) || s.data[s.pos] != ',' {
			return nil, false, s.unexpected()
		}
		s.pos++
		s.ws()
	}
	key, err = s.rawString(&s.buf)
	if err != nil {
		return nil, false, err
	}
	s.ws()
	if s.pos >= len(s.data) || s.data[s.pos] != ':' {
		return nil, false, s.unexpected()
	}
	s.pos++
	return key, true, nil
}

// Object walks the members of the next object: fn is called with each key
// (valid only during the call), positioned at the member's value, which it
// must consume (or Skip). The walk stops at fn's first error. Parsers use
// it instead of writing the Enter/NextKey loop again for every object.
func (s *Scanner) Object(fn func(key []byte) error) error {
	if err := s.Enter('{'); err != nil {
		return err
	}
	for first := true; ; first = false {
		key, ok, err := s.NextKey(first)
		if err != nil || !ok {
			return err
		}
		if err := fn(key); err != nil {
			return err
		}
	}
}

// Array walks the elements of the next array; fn must consume each one.
func (s *Scanner) Array(fn func() error) error {
	if err := s.Enter('['); err != nil {
		return err
	}
	for first := true; ; first = false {
		ok, err := s.NextElem(first)
		if err != nil || !ok {
			return err
		}
		if err := fn(); err != nil {
			return err
		}
	}
}

// NextElem moves to the next element of the array being walked; ok is
// false at the closing bracket.
func (s *Scanner) NextElem(first bool) (ok bool, err error) {
	s.ws()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
		s.depth--
		return false, nil
	}
	if !first {
		if s.pos >= len(s.data) || s.data[s.pos] != ',' {
			return false, s.unexpected()
		}
		s.pos++
	}
	return true, nil
}

// End checks that nothing but whitespace follows the document.
func (s *Scanner) End() error {
	s.ws()
	if s.pos != len(s.data) {
		return s.errorf("unexpected %q after the top-level value", s.data[s.pos])
	}
	return nil
}

// String reads a string value.
func (s *Scanner) String() (string, error) {
	s.ws()
	b, err := s.rawString(&s.vbuf)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// OwnString is String for a value kept long, like a tool result's text:
// an escaped one is unescaped into memory of its own, sized once, and
// returned without the copy String makes of its scratch buffer.
func (s *Scanner) OwnString() (string, error) {
	s.ws()
	var own []byte
	b, err := s.rawString(&own)
	switch {
	case err != nil:
		return "", err
	case len(b) == 0:
		return "", nil
	case own == nil || unsafe.SliceData(b) != unsafe.SliceData(own):
		return string(b), nil // b is part of the document
	}
	// own is never written again, so the string may share it (as
	// strings.Builder's String does).
	return unsafe.String(unsafe.SliceData(b), len(b)), nil
}

// Bytes reads a string value and returns its unescaped bytes without
// allocating; they are only valid until the scanner's next call.
func (s *Scanner) Bytes() ([]byte, error) {
	s.ws()
	return s.rawString(&s.vbuf)
}

// OptString reads a string or null ("").
func (s *Scanner) OptString() (string, error) {
	if s.Null() {
		return "", nil
	}
	return s.String()
}

// Int reads a number as an int (fractions are truncated).
func (s *Scanner) Int() (int, error) {
	s.ws()
	start := s.pos
	if err := s.number(); err != nil {
		return 0, err
	}
	tok := s.data[start:s.pos]
	n, neg, i := 0, false, 0
	if tok[0] == '-' {
		neg, i = true, 1
	}
	for ; i < len(tok); i++ {
		c := tok[i]
		if c < '0' || c > '9' {
			f, err := strconv.ParseFloat(string(tok), 64)
			if err != nil || f > 1<<53 || f < -(1<<53) {
				return 0, s.errorf("number %s out of range", tok)
			}
			return int(f), nil
		}
		if n > (1<<53)/10 {
			return 0, s.errorf("number %s out of range", tok)
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -n
	}
	return n, nil
}

// OptInt reads an int or null; set reports a non-null value.
func (s *Scanner) OptInt() (n int, set bool, err error) {
	if s.Null() {
		return 0, false, nil
	}
	n, err = s.Int()
	return n, err == nil, err
}

// Raw returns the next value's JSON text (validated) without decoding it.
func (s *Scanner) Raw() ([]byte, error) {
	s.ws()
	start := s.pos
	if err := s.Skip(); err != nil {
		return nil, err
	}
	return s.data[start:s.pos], nil
}

// Peek returns the first byte of the next value (0 at the end).
func (s *Scanner) Peek() byte {
	s.ws()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

// Skip validates and skips the next value.
func (s *Scanner) Skip() error {
	s.ws()
	if s.pos >= len(s.data) {
		return s.unexpected()
	}
	switch c := s.data[s.pos]; {
	case c == '"':
		_, err := s.rawString(&s.vbuf)
		return err
	case c == '{':
		if err := s.Enter('{'); err != nil {
			return err
		}
		for first := true; ; first = false {
			_, ok, err := s.NextKey(first)
			if err != nil {
				return err
			}
			if !ok {
				return nil
			}
			if err := s.Skip(); err != nil {
				return err
			}
		}
	case c == '[':
		if err := s.Enter('['); err != nil {
			return err
		}
		for first := true; ; first = false {
			ok, err := s.NextElem(first)
			if err != nil {
				return err
			}
			if !ok {
				return nil
			}
			if err := s.Skip(); err != nil {
				return err
			}
		}
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	}
	return s.unexpected()
}

func (s *Scanner) literal(lit string) error {
	if len(s.data)-s.pos >= len(lit) && string(s.data[s.pos:s.pos+len(lit)]) == lit {
		s.pos += len(lit)
		return nil
	}
	return s.unexpected()
}

func (s *Scanner) digits() int {
	n := 0
	for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
		s.pos++
		n++
	}
	return n
}

func (s *Scanner) number() error {
	if s.pos < len(s.data) && s.data[s.pos] == '-' {
		s.pos++
	}
	if s.pos >= len(s.data) {
		return s.unexpected()
	}
	if s.data[s.pos] == '0' {
		s.pos++
	} else if s.digits() == 0 {
		return s.unexpected()
	}
	if s.pos < len(s.data) && s.data[s.pos] == '.' {
		s.pos++
		if s.digits() == 0 {
			return s.unexpected()
		}
	}
	if s.pos < len(s.data) && (s.data[s.pos] == 'e' || s.data[s.pos] == 'E') {
		s.pos++
		if s.pos < len(s.data) && (s.data[s.pos] == '+' || s.data[s.pos] == '-') {
			s.pos++
		}
		if s.digits() == 0 {
			return s.unexpected()
		}
	}
	return nil
}

var errBadEscape = errors.New("bad escape")

// rawString reads a string and returns its unescaped bytes: a slice of the
// input when it needs no unescaping, else *scratch filled with the result.
func (s *Scanner) rawString(scratch *[]byte) ([]byte, error) {
	if s.pos >= len(s.data) || s.data[s.pos] != '"' {
		return nil, s.unexpected()
	}
	s.pos++
	start := s.pos
	escaped, wide := false, false
	for {
		if s.pos >= len(s.data) {
			return nil, s.errorf("unterminated string")
		}
		c := s.data[s.pos]
		switch {
		case c == '"':
			raw := s.data[start:s.pos]
			s.pos++
			if !escaped && (!wide || utf8.Valid(raw)) {
				return raw, nil
			}
			if cap(*scratch) < len(raw) {
				// Unescaping only shrinks a string, but for invalid
				// UTF-8 (a byte becomes U+FFFD's three): one allocation.
				*scratch = make([]byte, 0, len(raw))
			}
			out, err := unquote((*scratch)[:0], raw)
			if err != nil {
				s.pos = start
				return nil, s.errorf("%v in string", err)
			}
			*scratch = out
			return out, nil
		case c == '\\':
			escaped = true
			s.pos += 2
		case c < 0x20:
			return nil, s.errorf("control character %q in string", c)
		case c >= utf8.RuneSelf:
			wide = true
			s.pos++
		default:
			s.pos++
		}
	}
}

// unquote appends the unescaped form of raw (the body of a JSON string) to
// dst, mapping invalid UTF-8 and lone surrogates to U+FFFD as
// encoding/json does.
func unquote(dst, raw []byte) ([]byte, error) {
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '\\':
			if i+1 >= len(raw) {
				return nil, errBadEscape
			}
			switch raw[i+1] {
			case '"', '\\', '/':
				dst = append(dst, raw[i+1])
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r, ok := hex4(raw[i+2:])
				if !ok {
					return nil, errBadEscape
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if len(raw)-i >= 6 && raw[i] == '\\' && raw[i+1] == 'u' {
						if r2, ok := hex4(raw[i+2:]); ok {
							if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
								i += 6
								dst = utf8.AppendRune(dst, dec)
								continue
							}
						}
					}
					r = utf8.RuneError
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default:
				return nil, errBadEscape
			}
			i += 2
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, raw[i:i+size]...)
			}
			i += size
		}
	}
	return dst, nil
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r*16 + rune(c)
	}
	return r, true
}
