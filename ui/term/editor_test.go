package term

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// typeKeys feeds raw terminal bytes through a decoder into an editor and
// returns the actions.
func typeKeys(e *Editor, in string) []Action {
	var d Decoder
	var acts []Action
	keys := d.Feed([]byte(in))
	keys = append(keys, d.Flush()...)
	for _, k := range keys {
		if a := e.Handle(k); a != ActNone {
			acts = append(acts, a)
		}
	}
	return acts
}

func TestDecoderSequences(t *testing.T) {
	cases := []struct {
		in   string
		want []KeyKind
	}{
		{"a", []KeyKind{KeyRune}},
		{"\r", []KeyKind{KeyEnter}},
		{"\n", []KeyKind{KeyNewline}},
		{"\x1b\r", []KeyKind{KeyNewline}},
		{"\x1b[13;2u", []KeyKind{KeyNewline}},
		{"\x1b[27;2;13~", []KeyKind{KeyNewline}},
		{"\x1b[A\x1b[B\x1b[C\x1b[D", []KeyKind{KeyUp, KeyDown, KeyRight, KeyLeft}},
		{"\x1bOA\x1bOH\x1bOF", []KeyKind{KeyUp, KeyHome, KeyEnd}},
		{"\x1b[H\x1b[F\x1b[1~\x1b[4~\x1b[3~", []KeyKind{KeyHome, KeyEnd, KeyHome, KeyEnd, KeyDelete}},
		{"\x1b[1;5C\x1b[1;5D\x1bb\x1bf", []KeyKind{KeyWordRight, KeyWordLeft, KeyWordLeft, KeyWordRight}},
		{"\x01\x05\x0b\x15\x17\x19\x03\x04\x0c\x7f\x08\t", []KeyKind{KeyHome, KeyEnd, KeyKillEnd, KeyKillStart, KeyKillWord, KeyYank, KeyCtrlC, KeyCtrlD, KeyCtrlL, KeyBackspace, KeyBackspace, KeyTab}},
		{"\x1b\x7f", []KeyKind{KeyKillWord}},
		{"é世", []KeyKind{KeyRune, KeyRune}},
	}
	for _, c := range cases {
		var d Decoder
		var got []KeyKind
		for _, k := range append(d.Feed([]byte(c.in)), d.Flush()...) {
			got = append(got, k.Kind)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: got %v, want %v", c.in, got, c.want)
		}
	}
}

func TestDecoderSplitInput(t *testing.T) {
	var d Decoder
	in := []byte("x\x1b[1;5Cé\x1b[200~a\r\nb\x1b[201~")
	var got []Key
	for i := range in { // one byte at a time
		got = append(got, d.Feed(in[i:i+1])...)
	}
	if d.Pending() {
		t.Fatalf("pending after a complete input")
	}
	want := []Key{{Kind: KeyRune, Rune: 'x'}, {Kind: KeyWordRight}, {Kind: KeyRune, Rune: 'é'}, {Kind: KeyPaste, Text: "a\nb"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestDecoderLoneEscape(t *testing.T) {
	var d Decoder
	if ks := d.Feed([]byte{0x1b}); len(ks) != 0 || !d.Pending() {
		t.Fatalf("a lone escape must wait: %v pending=%v", ks, d.Pending())
	}
	ks := d.Flush()
	if len(ks) != 1 || ks[0].Kind != KeyEsc {
		t.Fatalf("flush: %+v", ks)
	}
}

func TestPasteKeepsControlBytes(t *testing.T) {
	e := NewEditor(nil)
	// A paste containing CR must not submit, and its escape-like bytes are text.
	acts := typeKeys(e, "\x1b[200~line1\rline2\x03\x1b[201~")
	if len(acts) != 0 {
		t.Fatalf("paste produced actions %v", acts)
	}
	if got := e.Text(); got != "line1\nline2\x03" {
		t.Fatalf("text = %q", got)
	}
}

func TestEditorEditing(t *testing.T) {
	cases := []struct {
		keys string
		text string
		pos  int
	}{
		{"hello", "hello", 5},
		{"hello\x1b[D\x1b[DXY", "helXYlo", 5},
		{"hello\x01>", ">hello", 1},
		{"hello\x01\x05!", "hello!", 6},
		{"hello world\x01\x1b[C\x1b[C\x0b", "he", 2},
		{"hello world\x15", "", 0},
		{"hello world\x17", "hello ", 6},
		{"hello world  \x17", "hello ", 6},
		{"hello world\x17\x17", "", 0},
		{"hello world\x17\x01\x19 ", "world hello ", 6},
		{"abc\x7f\x7f", "a", 1},
		{"abc\x01\x1b[3~", "bc", 0},
		{"abc\x01\x04", "bc", 0},
		{"one two\x1bb\x1bb\x1bf", "one two", 3},
		{"ab\\\rcd", "ab\ncd", 5},
		{"ab\ncd", "ab\ncd", 5},
		{"ab\x1b\rcd", "ab\ncd", 5},
		{"ab\ncd\x01", "ab\ncd", 3},
		{"ab\ncd\x1b[A", "ab\ncd", 2},
		{"ab\ncdef\x1b[A\x1b[B", "ab\ncdef", 5},
		{"ab\ncd\x1b[A\x01\x0b\x0b", "cd", 0},
	}
	for _, c := range cases {
		e := NewEditor(nil)
		if acts := typeKeys(e, c.keys); len(acts) != 0 {
			t.Errorf("%q: unexpected actions %v", c.keys, acts)
		}
		if e.Text() != c.text || e.Cursor() != c.pos {
			t.Errorf("%q: got %q@%d, want %q@%d", c.keys, e.Text(), e.Cursor(), c.text, c.pos)
		}
	}
}

func TestEditorActions(t *testing.T) {
	e := NewEditor(nil)
	if a := typeKeys(e, "\x04"); !reflect.DeepEqual(a, []Action{ActEOF}) {
		t.Fatalf("ctrl-d on empty: %v", a)
	}
	if a := typeKeys(e, "x\x04"); len(a) != 0 {
		t.Fatalf("ctrl-d on text: %v", a)
	}
	if a := typeKeys(e, "\r"); !reflect.DeepEqual(a, []Action{ActSubmit}) {
		t.Fatalf("enter: %v", a)
	}
	if a := typeKeys(e, "\x03\x1b\x0c\t"); !reflect.DeepEqual(a, []Action{ActInterrupt, ActEsc, ActRedraw, ActTab}) {
		t.Fatalf("got %v", a)
	}
}

func TestEditorHistory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "history")
	h := LoadHistory(path)
	h.Add("first")
	h.Add("second\nline")
	h.Add("second\nline") // repeat: skipped
	h.Add("   ")          // blank: skipped
	h = LoadHistory(path)
	if h.Len() != 2 || h.At(0) != "first" || h.At(1) != "second\nline" {
		t.Fatalf("reloaded history: %d %q", h.Len(), h.entries)
	}
	e := NewEditor(h)
	typeKeys(e, "draft")
	typeKeys(e, "\x1b[A")
	if e.Text() != "second\nline" {
		t.Fatalf("up: %q", e.Text())
	}
	// The cursor is on the second line of a multi-line entry: up moves
	// within the entry first, then to the older entry.
	typeKeys(e, "\x1b[A")
	if e.Text() != "second\nline" || e.Cursor() != 4 {
		t.Fatalf("up within entry: %q@%d", e.Text(), e.Cursor())
	}
	typeKeys(e, "\x1b[A")
	if e.Text() != "first" {
		t.Fatalf("up again: %q", e.Text())
	}
	typeKeys(e, "\x1b[A") // at the oldest: stays
	if e.Text() != "first" {
		t.Fatalf("past the oldest: %q", e.Text())
	}
	typeKeys(e, "\x1b[B\x1b[B\x1b[B")
	if e.Text() != "draft" {
		t.Fatalf("back to the draft: %q", e.Text())
	}
	e.Reset()
	typeKeys(e, "\x10") // ctrl-p
	if e.Text() != "second\nline" {
		t.Fatalf("ctrl-p: %q", e.Text())
	}
	b, err := os.ReadFile(path)
	if err != nil || strings.Count(string(b), "\n") != 2 {
		t.Fatalf("history file: %q %v", b, err)
	}
}

func TestHistoryReadsPlainLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history")
	if err := os.WriteFile(path, []byte("plain line\n\"json\\nline\"\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := LoadHistory(path)
	if h.Len() != 2 || h.At(0) != "plain line" || h.At(1) != "json\nline" {
		t.Fatalf("%q", h.entries)
	}
}

func TestLayout(t *testing.T) {
	cases := []struct {
		buf        string
		pos, width int
		rows       []string
		crow, ccol int
	}{
		{"", 0, 20, []string{"> "}, 0, 2},
		{"hello", 5, 20, []string{"> hello"}, 0, 7},
		{"hello", 0, 20, []string{"> hello"}, 0, 2},
		// 10 columns: "> " + 8 runes fill the first row exactly; the cursor
		// after them starts the next row.
		{"abcdefgh", 8, 10, []string{"> abcdefgh", "  "}, 1, 2},
		{"abcdefghij", 10, 10, []string{"> abcdefgh", "  ij"}, 1, 4},
		{"abcdefghij", 3, 10, []string{"> abcdefgh", "  ij"}, 0, 5},
		{"ab\ncd", 5, 20, []string{"> ab", ". cd"}, 1, 4},
		{"ab\ncd", 2, 20, []string{"> ab", ". cd"}, 0, 4},
		{"ab\n", 3, 20, []string{"> ab", ". "}, 1, 2},
		{"世界世界世", 5, 10, []string{"> 世界世界", "  世"}, 1, 4},
		{"a\tb", 3, 20, []string{"> a    b"}, 0, 8},
	}
	for _, c := range cases {
		rows, r, col := layout([]rune(c.buf), c.pos, "> ", ". ", c.width)
		if !reflect.DeepEqual(rows, c.rows) || r != c.crow || col != c.ccol {
			t.Errorf("%q@%d w%d: got %q (%d,%d), want %q (%d,%d)", c.buf, c.pos, c.width, rows, r, col, c.rows, c.crow, c.ccol)
		}
	}
}
