package bashtool

import (
	"fmt"
	"strings"

	"github.com/dshq/dsh/bash"
	"github.com/dshq/dsh/llm"
)

func textContent(s string) []llm.Block { return []llm.Block{llm.Text(s)} }

// renderResult is the text the model reads for a foreground command:
// stdout, then stderr under a "[stderr]" line, "(no output)" when both are
// empty, then the outcome markers — timeout first, then the signal or a
// non-zero exit code — each on its own line with no newline after the last.
// A clean run keeps the command's own trailing newline.
func renderResult(r bash.RunResult) string {
	body := streamText(r.Stdout)
	if errText := streamText(r.Stderr); errText != "" {
		body = withNewline(body) + "[stderr]\n" + errText
	}
	if body == "" {
		body = "(no output)"
	}
	var markers []string
	if r.TimedOut {
		markers = append(markers, fmt.Sprintf("[timed out after %dms]", r.Timeout.Milliseconds()))
	}
	if r.Signal != "" {
		markers = append(markers, "[killed by signal: "+r.Signal+"]")
	} else if r.ExitCode != nil && *r.ExitCode != 0 {
		markers = append(markers, fmt.Sprintf("[exit code: %d]", *r.ExitCode))
	}
	if len(markers) == 0 {
		return body
	}
	return withNewline(body) + strings.Join(markers, "\n")
}

// streamText is one stream's text plus, when its head was dropped, a note
// naming the file with the complete stream.
func streamText(o bash.CollectedOutput) string {
	if !o.Truncated {
		return o.Text
	}
	return withNewline(o.Text) + "[output truncated; full output: " + orUnavailable(o.SpillPath) + "]"
}

// withNewline ends a non-empty s with a newline.
func withNewline(s string) string {
	if s == "" || strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}

func orUnavailable(path string) string {
	if path == "" {
		return "(unavailable)"
	}
	return path
}

// renderRead is the text of a bash_output call: the new output (stderr under
// "[stderr]"), a note when some of it only survives in the spill files, and
// the task's status line.
func renderRead(r bash.TaskRead) string {
	body := r.Stdout
	if r.Stderr != "" {
		body = withNewline(body) + "[stderr]\n" + r.Stderr
	}
	if body == "" {
		body = "(no new output)"
	}
	if r.Lossy {
		var paths []string
		for _, p := range []string{r.StdoutSpill, r.StderrSpill} {
			if p != "" {
				paths = append(paths, p)
			}
		}
		body = withNewline(body) + "[some output was dropped from memory; full output: " + orUnavailable(strings.Join(paths, ", ")) + "]"
	}
	return withNewline(body) + statusLine(r.Task)
}

// statusLine describes a task's state for the model.
func statusLine(t bash.Task) string {
	switch t.Status {
	case bash.StatusRunning:
		return "[status: running]"
	case bash.StatusKilled:
		if t.Signal != "" {
			return "[status: killed by " + t.Signal + "]"
		}
		return "[status: killed]"
	default:
		if t.Signal != "" { // died of a signal nobody in dsh sent
			return "[status: completed, killed by signal: " + t.Signal + "]"
		}
		code := 0
		if t.ExitCode != nil {
			code = *t.ExitCode
		}
		return fmt.Sprintf("[status: completed, exit code: %d]", code)
	}
}
