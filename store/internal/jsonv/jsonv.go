// Package jsonv validates JSON quickly. It accepts exactly what
// encoding/json's Valid accepts, without its per-byte state machine, so
// loading a large log does not spend most of its time validating payloads.
package jsonv

import (
	"bytes"
	"encoding/json"
)

// Valid reports whether b is exactly one JSON value (surrounding whitespace
// allowed), like json.Valid.
func Valid(b []byte) bool {
	i := 0
	switch Skip(b, &i) {
	case OK:
		for ; i < len(b); i++ {
			if !isSpace(b[i]) {
				return false
			}
		}
		return true
	case TooDeep:
		return json.Valid(b)
	}
	return false
}

// Result is the outcome of [Skip].
type Result int

// Skip results.
const (
	OK      Result = iota // a valid value was skipped
	Bad                   // not a valid JSON value
	TooDeep               // nested deeper than encoding/json allows
)

// maxDepth matches encoding/json's nesting limit.
const maxDepth = 10000

// isSpace reports JSON whitespace.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// Skip validates one JSON value starting at b[*i] (leading whitespace
// allowed) and moves *i past it. It accepts exactly what json.Valid accepts
// for a value (any byte >= 0x20 inside strings, as encoding/json does).
func Skip(b []byte, i *int) Result {
	// stack holds '{' or '[' per open container.
	var stackBuf [32]byte
	stack := stackBuf[:0]
	j := *i
	for {
		for j < len(b) && isSpace(b[j]) {
			j++
		}
		if j >= len(b) {
			return Bad
		}
		// a value
		switch c := b[j]; {
		case c == '"':
			if !skipString(b, &j) {
				return Bad
			}
		case c == '{' || c == '[':
			if len(stack) >= maxDepth {
				return TooDeep
			}
			j++
			for j < len(b) && isSpace(b[j]) {
				j++
			}
			if j < len(b) && (c == '{' && b[j] == '}' || c == '[' && b[j] == ']') {
				j++
				break // empty container: a complete value
			}
			stack = append(stack, c)
			if c == '{' {
				if !skipKey(b, &j) {
					return Bad
				}
			}
			continue
		case c == '-' || c >= '0' && c <= '9':
			if !skipNumber(b, &j) {
				return Bad
			}
		case c == 't':
			if !bytes.HasPrefix(b[j:], []byte("true")) {
				return Bad
			}
			j += 4
		case c == 'f':
			if !bytes.HasPrefix(b[j:], []byte("false")) {
				return Bad
			}
			j += 5
		case c == 'n':
			if !bytes.HasPrefix(b[j:], []byte("null")) {
				return Bad
			}
			j += 4
		default:
			return Bad
		}
		// after a complete value: close containers or move to the next
		// element
		for {
			if len(stack) == 0 {
				*i = j
				return OK
			}
			for j < len(b) && isSpace(b[j]) {
				j++
			}
			if j >= len(b) {
				return Bad
			}
			top := stack[len(stack)-1]
			if b[j] == ',' {
				j++
				if top == '{' && !skipKey(b, &j) {
					return Bad
				}
				break
			}
			if top == '{' && b[j] == '}' || top == '[' && b[j] == ']' {
				j++
				stack = stack[:len(stack)-1]
				continue
			}
			return Bad
		}
	}
}

// skipKey skips `ws "key" ws :`.
func skipKey(b []byte, i *int) bool {
	j := *i
	for j < len(b) && isSpace(b[j]) {
		j++
	}
	if !skipString(b, &j) {
		return false
	}
	for j < len(b) && isSpace(b[j]) {
		j++
	}
	if j >= len(b) || b[j] != ':' {
		return false
	}
	*i = j + 1
	return true
}

// plainByte marks the bytes a string may hold without a closer look.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func skipString(b []byte, i *int) bool {
	j := *i
	if j >= len(b) || b[j] != '"' {
		return false
	}
	j++
	for {
		for j < len(b) && plainByte[b[j]] {
			j++
		}
		if j >= len(b) {
			return false
		}
		switch b[j] {
		case '"':
			*i = j + 1
			return true
		case '\\':
			j++
			if j >= len(b) {
				return false
			}
			switch b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j++
			case 'u':
				if j+4 >= len(b) {
					return false
				}
				for k := 1; k <= 4; k++ {
					if !isHex(b[j+k]) {
						return false
					}
				}
				j += 5
			default:
				return false
			}
		default:
			return false // a control character
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func skipNumber(b []byte, i *int) bool {
	j := *i
	if j < len(b) && b[j] == '-' {
		j++
	}
	if j >= len(b) {
		return false
	}
	if b[j] == '0' {
		j++
	} else if b[j] >= '1' && b[j] <= '9' {
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	} else {
		return false
	}
	if j < len(b) && b[j] == '.' {
		j++
		d := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		if j == d {
			return false
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		d := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		if j == d {
			return false
		}
	}
	*i = j
	return true
}
