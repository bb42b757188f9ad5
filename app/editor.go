package app

import (
	"fmt"

	"github.com/dshq/dsh/settings"
)

// EditorModeKey is "editorMode": how the terminal's prompt editor takes
// keys. "" or "default" is readline's keys; "vim" adds vim's NORMAL mode
// (Esc enters it; see ui/term's vim.go), which /vim toggles for a session.
var EditorModeKey = settings.Key[string]{Name: "editorMode", Validate: func(m string) error {
	switch m {
	case "", "default", "vim":
		return nil
	}
	return fmt.Errorf("unknown editor mode %q (default or vim)", m)
}}
