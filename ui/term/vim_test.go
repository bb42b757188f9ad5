package term

import (
	"strings"
	"testing"
)

// vimKeys turns a key script into keys: runes as typed, <esc>, <cr>,
// <bs> and <c-r> as those keys.
func vimKeys(script string) []Key {
	var ks []Key
	for script != "" {
		switch {
		case strings.HasPrefix(script, "<esc>"):
			ks, script = append(ks, Key{Kind: KeyEsc}), script[len("<esc>"):]
		case strings.HasPrefix(script, "<cr>"):
			ks, script = append(ks, Key{Kind: KeyEnter}), script[len("<cr>"):]
		case strings.HasPrefix(script, "<bs>"):
			ks, script = append(ks, Key{Kind: KeyBackspace}), script[len("<bs>"):]
		case strings.HasPrefix(script, "<c-r>"):
			ks, script = append(ks, Key{Kind: KeyCtrlR}), script[len("<c-r>"):]
		default:
			r := []rune(script)[0]
			ks, script = append(ks, Key{Kind: KeyRune, Rune: r}), script[len(string(r)):]
		}
	}
	return ks
}

// The vim mode's key machine: text typed in INSERT, then commands; the
// buffer, the cursor (| marks it) and the mode after them.
func TestVimKeys(t *testing.T) {
	cases := []struct {
		name, keys, want, mode string
	}{
		{"starts in insert", "abc", "abc|", "INSERT"},
		{"esc steps back onto the last character", "abc<esc>", "ab|c", "NORMAL"},
		{"h and l stay on the line", "ab\ncd<esc>hhhl", "ab\nc|d", "NORMAL"},
		{"0 ^ $", "  foo bar<esc>0", "|  foo bar", "NORMAL"},
		{"^ is the first non-blank", "  foo bar<esc>^", "  |foo bar", "NORMAL"},
		{"$ is the last character", "foo bar<esc>0$", "foo ba|r", "NORMAL"},
		{"w b e", "one two three<esc>0w", "one |two three", "NORMAL"},
		{"counted w", "one two three four<esc>03w", "one two three |four", "NORMAL"},
		{"w stops at punctuation", "foo.bar baz<esc>0w", "foo|.bar baz", "NORMAL"},
		{"b", "one two three<esc>b", "one two |three", "NORMAL"},
		{"2b", "one two three<esc>2b", "one |two three", "NORMAL"},
		{"e", "one two three<esc>0e", "on|e two three", "NORMAL"},
		{"e from a word's end", "one two three<esc>0ee", "one tw|o three", "NORMAL"},
		{"gg and G", "ab\ncd\nef<esc>ggjG", "ab\ncd\ne|f", "NORMAL"},
		{"j and k keep the column", "abc\ndef<esc>k", "ab|c\ndef", "NORMAL"},
		{"x", "abcdef<esc>0x", "|bcdef", "NORMAL"},
		{"3x", "abcdef<esc>03x", "|def", "NORMAL"},
		{"x stops at the line's end", "ab\ncd<esc>k05x", "|\ncd", "NORMAL"},
		{"dw", "one two three<esc>0dw", "|two three", "NORMAL"},
		{"d2w and 2dw", "one two three four<esc>0d2w", "|three four", "NORMAL"},
		{"2dw", "one two three four<esc>02dw", "|three four", "NORMAL"},
		{"de", "one two<esc>0de", "| two", "NORMAL"},
		{"db", "one two<esc>db", "one |o", "NORMAL"},
		{"d$ and D", "one two<esc>0wD", "one| ", "NORMAL"},
		{"d0", "one two<esc>d0", "|o", "NORMAL"},
		{"dd", "ab\ncd\nef<esc>kdd", "ab\n|ef", "NORMAL"},
		{"dd on the last line", "ab\ncd<esc>dd", "|ab", "NORMAL"},
		{"2dd", "ab\ncd\nef<esc>gg2dd", "|ef", "NORMAL"},
		{"dj", "ab\ncd\nef<esc>ggdj", "|ef", "NORMAL"},
		{"dk", "ab\ncd\nef<esc>dk", "|ab", "NORMAL"},
		{"cw changes to the word's end", "one two<esc>0cwsix", "six| two", "INSERT"},
		{"cc keeps the line", "ab\ncd\nef<esc>kccxy", "ab\nxy|\nef", "INSERT"},
		{"C", "one two<esc>0wCsix", "one six|", "INSERT"},
		{"c$", "one two<esc>0c$x", "x|", "INSERT"},
		{"yw p", "one two<esc>0ywP", "one| one two", "NORMAL"},
		{"yy p puts a line below", "ab\ncd<esc>kyyp", "ab\n|ab\ncd", "NORMAL"},
		{"yy P puts a line above", "ab\ncd<esc>yyP", "ab\n|cd\ncd", "NORMAL"},
		{"2yy", "ab\ncd<esc>gg2yyGp", "ab\ncd\n|ab\ncd", "NORMAL"},
		{"dd p moves a line", "ab\ncd\nef<esc>ggddp", "cd\n|ab\nef", "NORMAL"},
		{"x p swaps", "ab<esc>0xp", "b|a", "NORMAL"},
		{"3p", "a<esc>yl3p", "aaa|a", "NORMAL"},
		{"u undoes", "one two<esc>0dwu", "|one two", "NORMAL"},
		{"u undoes the first insertion", "one<esc>u", "|", "NORMAL"},
		{"u twice", "one two three<esc>0dwdwuu", "|one two three", "NORMAL"},
		{"ctrl-r redoes", "one two<esc>0dwu<c-r>", "|two", "NORMAL"},
		{"an insertion undoes at once", "one<esc>A two three<esc>u", "on|e", "NORMAL"},
		{"i", "bc<esc>0ia", "a|bc", "INSERT"},
		{"a", "ac<esc>0ab", "ab|c", "INSERT"},
		{"I", "  bc<esc>Ia", "  a|bc", "INSERT"},
		{"A", "ab<esc>0Ac", "abc|", "INSERT"},
		{"o", "ab\ncd<esc>kox", "ab\nx|\ncd", "INSERT"},
		{"O", "ab\ncd<esc>Ox", "ab\nx|\ncd", "INSERT"},
		{"backspace moves left and deletes nothing", "abc<esc><bs>", "a|bc", "NORMAL"},
		{"counted backspace", "abcdef<esc>3<bs>", "ab|cdef", "NORMAL"},
		{"backspace wraps to the line above", "ab\ncd<esc>0<bs>", "a|b\ncd", "NORMAL"},
		{"backspace at the start stays", "ab<esc>0<bs>", "|ab", "NORMAL"},
		{"d backspace deletes the character before", "abc<esc>d<bs>", "a|c", "NORMAL"},
		{"space moves right", "abc<esc>0 ", "a|bc", "NORMAL"},
		{"space wraps to the line below", "ab\ncd<esc>k$ ", "ab\n|cd", "NORMAL"},
		{"backspace in insert still deletes", "abc<bs>", "ab|", "INSERT"},
		{"esc cancels a pending command", "one two<esc>0d<esc>w", "one |two", "NORMAL"},
		{"an unknown command does nothing", "one<esc>0Q", "|one", "NORMAL"},
		{"a count alone waits", "one two<esc>02", "|one two", "NORMAL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := NewEditor(nil)
			e.SetVim(true)
			for _, k := range vimKeys(c.keys) {
				if a := e.Handle(k); a != ActNone {
					t.Fatalf("key %v: action %v", k, a)
				}
			}
			want := c.want
			got := e.Text()[:e.Cursor()] + "|" + e.Text()[e.Cursor():]
			if got != want || e.VimMode() != c.mode {
				t.Fatalf("%q: got %q in %s, want %q in %s", c.keys, got, e.VimMode(), want, c.mode)
			}
		})
	}
}

// Enter sends from NORMAL as from INSERT; esc in NORMAL is the UI's esc
// (interrupt, rewind), and each prompt starts in INSERT again.
func TestVimActions(t *testing.T) {
	e := NewEditor(nil)
	e.SetVim(true)
	for _, k := range vimKeys("hello<esc>") {
		e.Handle(k)
	}
	if a := e.Handle(Key{Kind: KeyEsc}); a != ActEsc {
		t.Fatalf("esc in NORMAL: %v, want ActEsc", a)
	}
	if a := e.Handle(Key{Kind: KeyEnter}); a != ActSubmit || e.Text() != "hello" {
		t.Fatalf("enter in NORMAL: %v with %q", a, e.Text())
	}
	e.Reset()
	if e.VimMode() != "INSERT" {
		t.Fatalf("after a reset the mode is %s", e.VimMode())
	}
	// Control keys keep their meaning in NORMAL.
	e.SetText("x")
	e.Handle(Key{Kind: KeyEsc})
	if a := e.Handle(Key{Kind: KeyCtrlC}); a != ActInterrupt {
		t.Fatalf("ctrl-c in NORMAL: %v", a)
	}
	// Off: esc is esc and letters are text.
	e.SetVim(false)
	e.Reset()
	for _, k := range vimKeys("dd") {
		e.Handle(k)
	}
	if e.Handle(Key{Kind: KeyEsc}) != ActEsc || e.Text() != "dd" || e.VimMode() != "" {
		t.Fatalf("vim off: %q %q", e.Text(), e.VimMode())
	}
}
