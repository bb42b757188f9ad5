package term

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"
)

// KeyKind names a decoded key.
type KeyKind int

// Keys the editor understands. Control keys are named by what they do in
// the editor; the decoder maps the usual byte sequences of xterm-compatible
// terminals onto them.
const (
	KeyRune      KeyKind = iota // Rune holds the character
	KeyPaste                    // Text holds the pasted text (bracketed paste)
	KeyEnter                    // CR: submit
	KeyNewline                  // ctrl-j, alt-enter, shift-enter: insert a newline
	KeyBackspace                // DEL, ctrl-h
	KeyDelete                   // ESC[3~
	KeyLeft                     // ←, ctrl-b
	KeyRight                    // →, ctrl-f
	KeyUp                       // ↑, ctrl-p
	KeyDown                     // ↓, ctrl-n
	KeyHome                     // ctrl-a, Home
	KeyEnd                      // ctrl-e, End
	KeyWordLeft                 // alt-b, ctrl-←
	KeyWordRight                // alt-f, ctrl-→
	KeyKillEnd                  // ctrl-k
	KeyKillStart                // ctrl-u
	KeyKillWord                 // ctrl-w, alt-backspace
	KeyYank                     // ctrl-y
	KeyTab                      // tab
	KeyBackTab                  // shift-tab
	KeyEsc                      // a lone escape
	KeyCtrlC
	KeyCtrlD
	KeyCtrlL
	KeyCtrlR // reverse history search
	KeyCtrlG // leave the history search
	KeyCtrlZ // suspend
	KeyCtrlO // the transcript view
	KeyCtrlV // paste an image from the clipboard
	KeyPageUp
	KeyPageDown
	KeyUnknown // an unrecognised sequence, dropped by the editor
)

// Key is one decoded key press (or one paste).
type Key struct {
	Kind KeyKind
	Rune rune
	Text string
}

var pasteEnd = []byte("\x1b[201~")

// Decoder turns terminal input bytes into keys. Input may arrive split at
// any byte; incomplete sequences wait for the next Feed. A lone escape is
// ambiguous until more input arrives or the caller decides it waited long
// enough and calls [Decoder.Flush].
type Decoder struct {
	buf     []byte
	inPaste bool
	paste   []byte
}

// Pending reports whether bytes wait for the rest of a sequence.
func (d *Decoder) Pending() bool { return len(d.buf) > 0 && !d.inPaste }

// Feed decodes as much of b (after any pending bytes) as is complete.
func (d *Decoder) Feed(b []byte) []Key {
	d.buf = append(d.buf, b...)
	var out []Key
	for len(d.buf) > 0 {
		if d.inPaste {
			i := bytes.Index(d.buf, pasteEnd)
			if i < 0 {
				// Keep a possible partial end marker for the next read.
				keep := 0
				for k := len(pasteEnd) - 1; k > 0; k-- {
					if bytes.HasSuffix(d.buf, pasteEnd[:k]) {
						keep = k
						break
					}
				}
				d.paste = append(d.paste, d.buf[:len(d.buf)-keep]...)
				d.buf = append(d.buf[:0], d.buf[len(d.buf)-keep:]...)
				return out
			}
			d.paste = append(d.paste, d.buf[:i]...)
			d.buf = d.buf[i+len(pasteEnd):]
			d.inPaste = false
			out = append(out, Key{Kind: KeyPaste, Text: normalizePaste(string(d.paste))})
			d.paste = nil
			continue
		}
		k, n := decodeOne(d.buf)
		if n == 0 {
			break // incomplete
		}
		d.buf = d.buf[n:]
		if k.Kind == KeyPaste { // the start marker
			d.inPaste = true
			continue
		}
		out = append(out, k)
	}
	if len(d.buf) == 0 {
		d.buf = nil
	}
	return out
}

// Flush resolves pending bytes after an input pause: a lone escape becomes
// KeyEsc, anything else is decoded as plain characters.
func (d *Decoder) Flush() []Key {
	if d.inPaste || len(d.buf) == 0 {
		return nil
	}
	var out []Key
	b := d.buf
	d.buf = nil
	if b[0] == 0x1b {
		out = append(out, Key{Kind: KeyEsc})
		b = b[1:]
	}
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r >= 0x20 && r != 0x7f {
			out = append(out, Key{Kind: KeyRune, Rune: r})
		}
		b = b[n:]
	}
	return out
}

func normalizePaste(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "\n")
}

var ctrlKeys = map[byte]KeyKind{
	0x01: KeyHome, 0x02: KeyLeft, 0x03: KeyCtrlC, 0x04: KeyCtrlD, 0x05: KeyEnd, 0x06: KeyRight,
	0x08: KeyBackspace, 0x09: KeyTab, 0x0a: KeyNewline, 0x0b: KeyKillEnd, 0x0c: KeyCtrlL, 0x0d: KeyEnter,
	0x0e: KeyDown, 0x10: KeyUp, 0x15: KeyKillStart, 0x17: KeyKillWord, 0x19: KeyYank, 0x7f: KeyBackspace,
	0x12: KeyCtrlR, 0x07: KeyCtrlG, 0x1a: KeyCtrlZ, 0x0f: KeyCtrlO, 0x16: KeyCtrlV,
}

// decodeOne decodes the key at the start of b and returns it with the
// number of bytes it used; 0 means b holds an incomplete sequence.
func decodeOne(b []byte) (Key, int) {
	c := b[0]
	if c == 0x1b {
		return decodeEscape(b)
	}
	if k, ok := ctrlKeys[c]; ok {
		return Key{Kind: k}, 1
	}
	if c < 0x20 {
		return Key{Kind: KeyUnknown}, 1
	}
	if !utf8.FullRune(b) {
		return Key{}, 0
	}
	r, n := utf8.DecodeRune(b)
	if r == utf8.RuneError && n == 1 {
		return Key{Kind: KeyUnknown}, 1
	}
	return Key{Kind: KeyRune, Rune: r}, n
}

func decodeEscape(b []byte) (Key, int) {
	if len(b) < 2 {
		return Key{}, 0
	}
	switch c := b[1]; c {
	case '[':
		return decodeCSI(b)
	case 'O': // SS3: application cursor keys
		if len(b) < 3 {
			return Key{}, 0
		}
		switch b[2] {
		case 'A':
			return Key{Kind: KeyUp}, 3
		case 'B':
			return Key{Kind: KeyDown}, 3
		case 'C':
			return Key{Kind: KeyRight}, 3
		case 'D':
			return Key{Kind: KeyLeft}, 3
		case 'H':
			return Key{Kind: KeyHome}, 3
		case 'F':
			return Key{Kind: KeyEnd}, 3
		}
		return Key{Kind: KeyUnknown}, 3
	case '\r', '\n':
		return Key{Kind: KeyNewline}, 2
	case 0x7f, 0x08:
		return Key{Kind: KeyKillWord}, 2
	case 'b', 'B':
		return Key{Kind: KeyWordLeft}, 2
	case 'f', 'F':
		return Key{Kind: KeyWordRight}, 2
	case 0x1b:
		return Key{Kind: KeyEsc}, 1
	default:
		if c < 0x20 {
			return Key{Kind: KeyEsc}, 1
		}
		// alt+character: not bound; drop both bytes of an ASCII one.
		if c < 0x80 {
			return Key{Kind: KeyUnknown}, 2
		}
		return Key{Kind: KeyEsc}, 1
	}
}

// decodeCSI decodes ESC [ params final.
func decodeCSI(b []byte) (Key, int) {
	i := 2
	for ; i < len(b); i++ {
		if b[i] >= 0x40 && b[i] <= 0x7e {
			break
		}
		if b[i] < 0x20 || i > 32 { // not a CSI after all
			return Key{Kind: KeyEsc}, 1
		}
	}
	if i >= len(b) {
		return Key{}, 0
	}
	params, final, n := string(b[2:i]), b[i], i+1
	var ps []int
	for _, p := range strings.Split(params, ";") {
		v, _ := strconv.Atoi(p)
		ps = append(ps, v)
	}
	mod := 0
	if len(ps) > 1 {
		mod = ps[1]
	}
	ctrlOrAlt := mod == 3 || mod == 5 || mod == 9
	switch final {
	case 'A':
		return Key{Kind: KeyUp}, n
	case 'B':
		return Key{Kind: KeyDown}, n
	case 'C':
		if ctrlOrAlt {
			return Key{Kind: KeyWordRight}, n
		}
		return Key{Kind: KeyRight}, n
	case 'D':
		if ctrlOrAlt {
			return Key{Kind: KeyWordLeft}, n
		}
		return Key{Kind: KeyLeft}, n
	case 'H':
		return Key{Kind: KeyHome}, n
	case 'F':
		return Key{Kind: KeyEnd}, n
	case 'Z':
		return Key{Kind: KeyBackTab}, n
	case 'u': // kitty / fixterms: 13;2u is shift-enter
		if len(ps) > 0 && ps[0] == 13 && mod > 1 {
			return Key{Kind: KeyNewline}, n
		}
		if len(ps) > 0 && ps[0] == 13 {
			return Key{Kind: KeyEnter}, n
		}
	case '~':
		switch ps[0] {
		case 1, 7:
			return Key{Kind: KeyHome}, n
		case 4, 8:
			return Key{Kind: KeyEnd}, n
		case 3:
			return Key{Kind: KeyDelete}, n
		case 5:
			return Key{Kind: KeyPageUp}, n
		case 6:
			return Key{Kind: KeyPageDown}, n
		case 200:
			return Key{Kind: KeyPaste}, n // paste start; the decoder switches mode
		case 27: // xterm modifyOtherKeys: 27;mod;13~
			if len(ps) == 3 && ps[2] == 13 {
				return Key{Kind: KeyNewline}, n
			}
		}
	}
	return Key{Kind: KeyUnknown}, n
}
