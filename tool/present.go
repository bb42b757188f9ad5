package tool

import "encoding/json"

// View is a provider-neutral rendering of a call or its result, produced by a
// tool's pure presenters so every front-end (terminal, ACP) shows the same
// thing.
type View struct {
	Title     string     `json:"title,omitempty"`
	Kind      Kind       `json:"kind,omitempty"`
	Locations []Location `json:"locations,omitempty"`
	Diffs     []FileDiff `json:"diffs,omitempty"`
	// Terminal-style views.
	Command  string `json:"command,omitempty"`
	Cwd      string `json:"cwd,omitempty"`
	Output   string `json:"output,omitempty"`
	ExitCode *int   `json:"exitCode,omitempty"`
	// Text is a short plain-text body for generic cards.
	Text string `json:"text,omitempty"`
}

// Location is a file position a call touches.
type Location struct {
	Path string `json:"path"`
	Line int    `json:"line,omitempty"`
}

// FileDiff is one file's change; OldText nil means a new file.
type FileDiff struct {
	Path    string  `json:"path"`
	OldText *string `json:"oldText"`
	NewText string  `json:"newText"`
}

// CallPresenter is implemented by tools that render their pending calls.
// It must depend only on its input (it runs on replays of arbitrary logs) and
// return nil for arguments it cannot read.
type CallPresenter interface {
	PresentCall(args json.RawMessage) *View
}

// ResultPresenter is implemented by tools that render their results.
type ResultPresenter interface {
	PresentResult(args json.RawMessage, res Result) *View
}
