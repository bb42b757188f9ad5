package store

import (
	"errors"
	"unicode/utf16"
	"unicode/utf8"
)

const hexDigits = "0123456789ABCDEF"

// EncodeSegment turns an arbitrary id into one safe path segment, injectively:
// [A-Za-z0-9._-] stay, every other UTF-16 code unit (including '~') becomes
// '~' and four uppercase hex digits, "." and ".." are escaped whole, and each
// byte of invalid UTF-8 becomes "~~" and two hex digits (a form the other
// escapes never produce). "a/b" → "a~002Fb", "a~b" → "a~007Eb".
func EncodeSegment(raw string) (string, error) {
	switch raw {
	case "":
		return "", errors.New("store: cannot encode an empty path segment")
	case ".":
		return "~002E", nil
	case "..":
		return "~002E~002E", nil
	}
	plain := true
	for i := 0; i < len(raw); i++ {
		if !keep(raw[i]) {
			plain = false
			break
		}
	}
	if plain {
		return raw, nil
	}
	out := make([]byte, 0, len(raw)+16)
	unit := func(u uint16) {
		out = append(out, '~', hexDigits[u>>12&15], hexDigits[u>>8&15], hexDigits[u>>4&15], hexDigits[u&15])
	}
	for i := 0; i < len(raw); {
		c := raw[i]
		if c < utf8.RuneSelf {
			if keep(c) {
				out = append(out, c)
			} else {
				unit(uint16(c))
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(raw[i:])
		if r == utf8.RuneError && size == 1 {
			out = append(out, '~', '~', hexDigits[c>>4], hexDigits[c&15])
			i++
			continue
		}
		if r >= 0x10000 {
			hi, lo := utf16.EncodeRune(r)
			unit(uint16(hi))
			unit(uint16(lo))
		} else {
			unit(uint16(r))
		}
		i += size
	}
	return string(out), nil
}

func keep(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}
