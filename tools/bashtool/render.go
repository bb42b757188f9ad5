package bashtool

import (
	"context"
	"fmt"
	"strings"

	"github.com/dshq/dsh/bash"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/sandbox"
	"github.com/dshq/dsh/tool"
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
	if o.Binary {
		return binaryText(o.Size, o.SpillPath)
	}
	if !o.Truncated {
		return o.Text
	}
	return withNewline(o.Text) + "[output truncated; full output: " + orUnavailable(o.SpillPath) + "]"
}

// binaryText stands in for output that is not text: its size and where
// all of it is, not fifteen thousand replacement characters.
func binaryText(size int64, path string) string {
	if path == "" {
		return fmt.Sprintf("[binary output, %s bytes, not shown (it could not be saved to a file)]", thousands(size))
	}
	return fmt.Sprintf("[binary output, %s bytes, saved to %s]", thousands(size), path)
}

// thousands writes n with comma separators: 15632 is "15,632".
func thousands(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
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
	body, errText := r.Stdout, r.Stderr
	if r.StdoutBinary > 0 {
		body = binaryText(r.StdoutBinary, r.StdoutSpill)
	}
	if r.StderrBinary > 0 {
		errText = binaryText(r.StderrBinary, r.StderrSpill)
	}
	if errText != "" {
		body = withNewline(body) + "[stderr]\n" + errText
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

// policy is the call's sandbox policy, nil without a sandbox.
func (s *state) policy(ctx context.Context, call tool.Call, dir string, unsandboxed bool) (*sandbox.Policy, error) {
	if s.sandbox == nil || s.sandbox.Policy == nil {
		return nil, nil
	}
	return s.sandbox.Policy(ctx, call, dir, unsandboxed)
}

// denialMarks are what programs print when the kernel refuses them: a
// Landlock or seccomp refusal (EACCES, EPERM), a read-only bind (EROFS), a
// masked path, no network.
var denialMarks = []string{
	"Permission denied", "Operation not permitted", "Read-only file system",
	"Network is unreachable", "Could not resolve host", "Temporary failure in name resolution",
	"EACCES", "EPERM", "EROFS",
}

// sandboxNote explains a result the sandbox may have caused: requests the
// proxy refused, and a failure that looks like a kernel refusal in a
// confined mode, with the way out (a re-run outside the sandbox, which the
// user must approve).
func sandboxNote(r bash.RunResult) string {
	if r.Sandbox == nil || !r.Sandbox.Mode.Confines() {
		return ""
	}
	var lines []string
	for _, b := range r.Sandbox.Blocked {
		lines = append(lines, "[sandbox: "+b+"]")
	}
	failed := r.Signal != "" || r.ExitCode != nil && *r.ExitCode != 0
	out := r.Stdout.Text + r.Stderr.Text
	denied := len(lines) > 0
	for _, m := range denialMarks {
		if strings.Contains(out, m) {
			denied = true
		}
	}
	if !failed || !denied {
		return strings.Join(lines, "\n")
	}
	lines = append(lines, fmt.Sprintf("[sandbox: this command ran in %s: writes only in the workspace and a private /tmp, no network but the allowed domains, secrets hidden. If it failed because of that and the work needs the access, run it again with dangerouslyDisableSandbox: true; the user will be asked.]", r.Sandbox.Mode))
	return strings.Join(lines, "\n")
}
