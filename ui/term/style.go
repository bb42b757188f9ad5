package term

import (
	"charm.land/lipgloss/v2"
)

// paint styles one string.
type paint func(string) string

// Styles are the terminal UI's text styles. The zero value is unusable; use
// [NewStyles].
type Styles struct {
	Plain bool

	Dim, Bold, Italic paint
	User              paint // the "›" of user prompts
	Accent            paint // titles, the prompt
	OK, Err, Warn     paint
	Add, Del, Hunk    paint
	Demo              paint // the demo-model badge
	Key               paint // key names in help and questions
	Code              paint // inline code in answers
	H1, H2            paint // Markdown headings (level 3 and deeper are bold)
}

// NewStyles returns colour styles, or plain ones (no escape sequences at
// all) when plain is set — NO_COLOR, dumb terminals and tests.
func NewStyles(plain bool) Styles {
	if plain {
		id := func(s string) string { return s }
		return Styles{Plain: true, Dim: id, Bold: id, Italic: id, User: id, Accent: id, OK: id, Err: id, Warn: id,
			Add: id, Del: id, Hunk: id, Demo: id, Key: id, Code: id, H1: id, H2: id}
	}
	mk := func(s lipgloss.Style) paint { return func(x string) string { return s.Render(x) } }
	fg := func(c string) lipgloss.Style { return lipgloss.NewStyle().Foreground(lipgloss.Color(c)) }
	return Styles{
		Dim:    mk(lipgloss.NewStyle().Faint(true)),
		Bold:   mk(lipgloss.NewStyle().Bold(true)),
		Italic: mk(lipgloss.NewStyle().Italic(true)),
		User:   mk(fg("5").Bold(true)),
		Accent: mk(fg("6").Bold(true)),
		OK:     mk(fg("2")),
		Err:    mk(fg("1")),
		Warn:   mk(fg("3")),
		Add:    mk(fg("2")),
		Del:    mk(fg("1")),
		Hunk:   mk(fg("6").Faint(true)),
		Demo:   mk(fg("0").Background(lipgloss.Color("3")).Bold(true)),
		Key:    mk(lipgloss.NewStyle().Bold(true)),
		// Inline code is coloured, never bold, so it cannot pass for a
		// heading or emphasis.
		Code: mk(fg("179")),
		// lipgloss underlines rune by rune (an escape pair per letter):
		// one sequence for the whole heading instead.
		H1: func(x string) string { return "\x1b[1;4;36m" + x + "\x1b[m" },
		H2: mk(fg("6").Bold(true)),
	}
}
