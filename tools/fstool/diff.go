package fstool

import (
	"fmt"
	"strings"

	"github.com/dshq/dsh/internal/textdiff"
	"github.com/dshq/dsh/tool"
)

// maxDiffBytes bounds the hunks recorded in a result's Meta (which is
// stored in the session log); larger diffs are omitted and front-ends fall
// back to the call's arguments.
const maxDiffBytes = 1 << 20

// fileDiffs returns the applied hunks of before→after as front-end diffs
// (one per hunk, old and new text with their context) and as a unified diff.
// path is the path the model gave, which is what UIs show. It returns
// nothing when the texts are equal or the diff exceeds maxDiffBytes.
func fileDiffs(path, before, after string) ([]tool.FileDiff, string) {
	if before == after {
		return nil, ""
	}
	hs := textdiff.Hunks(textdiff.Lines(textdiff.Split(before), textdiff.Split(after)))
	if len(hs) == 0 {
		return nil, ""
	}
	diffs := make([]tool.FileDiff, 0, len(hs))
	var u strings.Builder
	fmt.Fprintf(&u, "--- %s\n+++ %s\n", path, path)
	for _, h := range hs {
		var oldL, newL []string
		for _, o := range h.Ops {
			text := strings.TrimSuffix(o.Line, "\n")
			if o.Kind != textdiff.Insert {
				oldL = append(oldL, text)
			}
			if o.Kind != textdiff.Delete {
				newL = append(newL, text)
			}
		}
		textdiff.WriteHunk(&u, h)
		d := tool.FileDiff{Path: path, NewText: strings.Join(newL, "\n")}
		if len(oldL) > 0 {
			s := strings.Join(oldL, "\n")
			d.OldText = &s
		}
		diffs = append(diffs, d)
		if u.Len() > maxDiffBytes {
			return nil, ""
		}
	}
	return diffs, u.String()
}
