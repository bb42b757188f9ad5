package term

import (
	"strings"
	"unicode/utf8"

	"github.com/dshq/dsh/tool"
)

// Untrusted text — whatever the model, tools, plugins or stored sessions
// produced — never reaches the terminal raw: an escape sequence in it could
// write the clipboard (OSC 52), retitle the window, move the cursor and
// overdraw what the UI shows (an approval question, say). Every such string
// goes through sanitize (or sanitizeStrict) when it enters the UI, before
// the UI adds its own styling, so only the UI's escape sequences are ever
// written.
//
// sanitize keeps "\n" and "\t", turns "\r\n" into "\n", drops a lone "\r"
// and CSI sequences (colours and cursor movement in tool output) and shows
// every other control character in caret form: ESC as "^[", BEL as "^G",
// DEL as "^?", a C1 control as "^[" and its 7-bit letter (U+009B as "^[[").
// Invalid UTF-8 becomes U+FFFD.
func sanitize(s string) string { return sanitizeMode(s, false) }

// sanitizeStrict is sanitize for text the user must read exactly — the
// commands and titles of calls put to them for approval: nothing is
// dropped, a lone "\r" shows as "^M" and escape sequences in caret form.
func sanitizeStrict(s string) string { return sanitizeMode(s, true) }

func sanitizeMode(s string, strict bool) string {
	if !needsSanitize(s) {
		return s // the fast path: no control characters at all
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			b.WriteRune(utf8.RuneError)
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r == '\r':
			switch {
			case i+1 < len(s) && s[i+1] == '\n':
				// CRLF: the "\n" follows.
			case strict:
				b.WriteString("^M")
			}
		case r == 0x1b:
			if n := csiLen(s[i:]); n > 0 && !strict {
				i += n
				continue
			}
			b.WriteString("^[")
		case r < 0x20:
			b.WriteByte('^')
			b.WriteByte(byte(r) + 0x40)
		case r == 0x7f:
			b.WriteString("^?")
		case r >= 0x80 && r <= 0x9f:
			b.WriteString("^[")
			b.WriteByte(byte(r - 0x40))
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// needsSanitize reports whether s holds a control character (other than
// "\n" and "\t"), a C1 control or invalid UTF-8.
func needsSanitize(s string) bool {
	high := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c < 0x20:
			if c != '\n' && c != '\t' {
				return true
			}
		case c == 0x7f:
			return true
		case c >= 0x80:
			high = true
			// C1 controls are U+0080–U+009F: 0xC2 0x80–0x9F in UTF-8.
			if c == 0xc2 && i+1 < len(s) && s[i+1] >= 0x80 && s[i+1] <= 0x9f {
				return true
			}
		}
	}
	return high && !utf8.ValidString(s)
}

// csiLen is the length of the complete CSI sequence ("ESC [", parameter
// and intermediate bytes, a final byte) s starts with, or 0.
func csiLen(s string) int {
	if len(s) < 3 || s[0] != 0x1b || s[1] != '[' {
		return 0
	}
	for i := 2; i < len(s) && i < 64; i++ {
		c := s[i]
		switch {
		case c >= 0x40 && c <= 0x7e:
			return i + 1
		case c >= 0x20 && c <= 0x3f:
		default:
			return 0
		}
	}
	return 0
}

// sanitizeView returns a copy of a presenter's view with its text made safe
// to print (nil for nil). Commands, titles, paths and the working directory
// are shown exactly (sanitizeStrict); output and bodies as text.
func sanitizeView(v *tool.View) *tool.View {
	if v == nil {
		return nil
	}
	c := *v
	c.Title = sanitizeStrict(v.Title)
	c.Command = sanitizeStrict(v.Command)
	c.Cwd = sanitizeStrict(v.Cwd)
	c.Output = sanitize(v.Output)
	c.Text = sanitize(v.Text)
	if v.Locations != nil {
		c.Locations = make([]tool.Location, len(v.Locations))
		for i, l := range v.Locations {
			l.Path = sanitizeStrict(l.Path)
			c.Locations[i] = l
		}
	}
	if v.Diffs != nil {
		c.Diffs = make([]tool.FileDiff, len(v.Diffs))
		for i, d := range v.Diffs {
			d.Path = sanitizeStrict(d.Path)
			if d.OldText != nil {
				old := sanitize(*d.OldText)
				d.OldText = &old
			}
			d.NewText = sanitize(d.NewText)
			c.Diffs[i] = d
		}
	}
	return &c
}
