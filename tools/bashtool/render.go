package bashtool

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dshq/dsh/bash"
	"github.com/dshq/dsh/bash/analysis"
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
// link across the sandbox's boundary (EXDEV), no network or the
// sandbox's own loopback, a process outside it.
var denialMarks = []string{
	"Permission denied", "Operation not permitted", "Read-only file system", "Invalid cross-device link",
	"Network is unreachable", "Could not resolve host", "Temporary failure in name resolution", "Connection refused",
	"No such process", "EACCES", "EPERM", "EROFS", "EXDEV",
}

// sandboxNote explains what the sandbox did to a command: the processes
// it left running that were stopped (in every mode), and in a confined
// mode the requests the proxy refused, the hidden paths the command
// named or its output mentions, and — when it failed in a way that looks
// like a kernel refusal — the mode and the way out (a re-run outside the
// sandbox, which the user must approve).
func sandboxNote(r bash.RunResult, p *sandbox.Policy, command, dir, home string) string {
	if r.Sandbox == nil {
		return ""
	}
	var lines []string
	if n := r.Sandbox.Leftovers; n > 0 {
		what := "1 process"
		if n > 1 {
			what = fmt.Sprintf("%d processes", n)
		}
		lines = append(lines, fmt.Sprintf("[sandbox: the command left %s running (a daemon or background job); they were stopped when it ended: a finished command leaves nothing behind. Start servers with run_in_background.]", what))
	}
	if !r.Sandbox.Mode.Confines() {
		return strings.Join(lines, "\n")
	}
	for _, b := range r.Sandbox.Blocked {
		lines = append(lines, "[sandbox: "+b+"]")
	}
	out := r.Stdout.Text + r.Stderr.Text
	hidden := hiddenNamed(p, command, dir, home, out)
	for _, e := range hidden {
		lines = append(lines, fmt.Sprintf("[sandbox: %s is hidden from sandboxed commands: %s]", e.Path, e.Why))
	}
	failed := r.Signal != "" || r.ExitCode != nil && *r.ExitCode != 0
	if failed && (strings.Contains(out, "No such process") || strings.Contains(out, "/proc/") && strings.Contains(out, "No such file")) {
		lines = append(lines, "[sandbox: the sandbox has its own process list: processes outside it, dsh included, cannot be seen, signalled or traced from inside]")
	}
	denied := len(r.Sandbox.Blocked) > 0 || len(hidden) > 0
	lower := strings.ToLower(out)
	for _, m := range denialMarks {
		if strings.Contains(lower, strings.ToLower(m)) {
			denied = true
		}
	}
	if failed && denied {
		lines = append(lines, fmt.Sprintf("[sandbox: this command ran in %s: writes only in the workspace and a private /tmp, no network but the allowed domains, secrets hidden. If it failed because of that and the work needs the access, run it again with dangerouslyDisableSandbox: true; the user will be asked.]", r.Sandbox.Mode))
	}
	return strings.Join(lines, "\n")
}

// maxHiddenNotes bounds the hidden paths one result names.
const maxHiddenNotes = 5

// hiddenNamed lists the hidden entries of p that the command's line names
// (its files, as the shell analysis reads them) or its output mentions: a
// hidden file reads as empty or unreadable, and the model should know why.
func hiddenNamed(p *sandbox.Policy, command, dir, home, out string) []sandbox.Entry {
	if p == nil || len(p.Hidden) == 0 {
		return nil
	}
	var paths []string
	line := analysis.Analyze(command, home)
	for _, c := range line.Commands {
		for _, pa := range c.Paths {
			if !pa.Dynamic {
				paths = append(paths, pa.Path)
			}
		}
	}
	for _, f := range append(slices.Clone(line.Reads), line.Writes...) {
		if !f.Dynamic {
			paths = append(paths, f.Path)
		}
	}
	var found []sandbox.Entry
	for _, e := range p.Hidden {
		if len(found) == maxHiddenNotes {
			break
		}
		hit := strings.Contains(out, e.Path)
		for _, q := range paths {
			if !filepath.IsAbs(q) {
				q = filepath.Join(dir, q)
			}
			if within(filepath.Clean(q), e.Path) {
				hit = true
			}
		}
		if hit {
			found = append(found, e)
		}
	}
	return found
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}
