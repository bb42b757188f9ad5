package claudemsg

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/tools/fstool"
)

// Call is a tool call as dsh ran it.
type Call struct {
	// Name is dsh's tool name.
	Name string
	// Args are the effective arguments (after any rewrite).
	Args json.RawMessage
	// Cwd is the session's working directory (relative paths resolve
	// against it).
	Cwd string
	// PreviousTodos is the todo list before a todo_write call (Claude
	// Code's oldTodos), nil when there was none.
	PreviousTodos json.RawMessage
}

// Outcome is what the call produced.
type Outcome struct {
	Content []llm.Block
	// Meta is the tool's presentation data (exit codes, diffs), as logged.
	Meta    json.RawMessage
	IsError bool
	// Duration of the run, when known (durationMs, totalDurationMs).
	Duration time.Duration
}

// ToolResponse is Claude Code's structured result of a tool call: what it
// records as a transcript line's toolUseResult and sends PostToolUse hooks
// as tool_response. Each built-in tool gets its Claude Code shape (Bash's
// stdout/stderr/interrupted, Write's and Edit's filePath and
// structuredPatch, Read's file window, Grep's and Glob's filenames); MCP
// tools get their content blocks; other tools their text.
//
// Fields Claude Code fills from state dsh does not keep are null or empty:
// Write's and Edit's originalFile (dsh logs the hunks, not the whole file)
// and the subagent tool's token counts.
func ToolResponse(c Call, o Outcome) any {
	text := llm.TextOf(o.Content)
	args, _ := object(c.Args)
	switch c.Name {
	case "bash":
		return bashResponse(text, bashMetaOf(o.Meta))
	case "read":
		return readResponse(text, AbsPath(c.Cwd, str(args, "file_path")))
	case "write":
		return writeResponse(c, o)
	case "edit":
		return editResponse(c, o)
	case "glob":
		return globResponse(text, c.Cwd, o.Duration)
	case "grep":
		return grepResponse(text, c.Cwd, str(args, "output_mode"))
	case "task", "fork":
		return agentResponse(text, o, str(args, "prompt"))
	case "web_fetch":
		return fetchResponse(text, o, str(args, "url"))
	case "web_search":
		return searchResponse(o, str(args, "query"))
	case "todo_write":
		old := c.PreviousTodos
		if len(old) == 0 {
			old = json.RawMessage(`[]`)
		}
		todos := args["todos"]
		if len(todos) == 0 {
			todos = json.RawMessage(`[]`)
		}
		return map[string]any{"oldTodos": old, "newTodos": todos}
	case "bash_output":
		return map[string]any{"task_id": str(args, "task_id"), "output": text}
	case "bash_kill":
		return map[string]any{"message": text, "task_id": str(args, "task_id"), "task_type": "local_bash"}
	case "exit_plan_mode":
		return map[string]any{"plan": str(args, "plan"), "isAgent": false}
	}
	if strings.HasPrefix(c.Name, "mcp__") {
		return Blocks(o.Content)
	}
	return text
}

// Failure reports whether Claude Code counts the call as a tool that ran
// and failed (its PostToolUseFailure event), and the error text it would
// report: an error result, or a shell command that exited non-zero, was
// killed by a signal or timed out ("Exit code N" first, then the output).
func Failure(c Call, o Outcome) (bool, string) {
	text := llm.TextOf(o.Content)
	if o.IsError {
		return true, strings.TrimPrefix(text, "Error: ")
	}
	if c.Name != "bash" {
		return false, ""
	}
	m := bashMetaOf(o.Meta)
	if m.Background {
		return false, ""
	}
	stdout, stderr := bashStreams(text, m)
	out := stdout + stderr
	switch {
	case m.TimedOut:
		return true, strings.TrimRight(fmt.Sprintf("Command timed out after %s\n%s", (time.Duration(m.TimeoutMs)*time.Millisecond).String(), out), "\n")
	case m.Signal != "":
		return true, strings.TrimRight("Killed by signal "+m.Signal+"\n"+out, "\n")
	case m.ExitCode != nil && *m.ExitCode != 0:
		return true, strings.TrimRight(fmt.Sprintf("Exit code %d\n%s", *m.ExitCode, out), "\n")
	}
	return false, ""
}

// bashMeta is what the bash tool records with a result (tools/bashtool).
type bashMeta struct {
	Background bool   `json:"background"`
	TaskID     string `json:"taskId"`
	ExitCode   *int   `json:"exitCode"`
	Signal     string `json:"signal"`
	TimedOut   bool   `json:"timedOut"`
	TimeoutMs  int64  `json:"timeoutMs"`
}

func bashMetaOf(raw json.RawMessage) bashMeta {
	var m bashMeta
	_ = json.Unmarshal(raw, &m)
	return m
}

func bashResponse(text string, m bashMeta) map[string]any {
	if m.Background {
		return map[string]any{"stdout": "", "stderr": "", "interrupted": false, "isImage": false, "backgroundTaskId": m.TaskID}
	}
	stdout, stderr := bashStreams(text, m)
	return map[string]any{"stdout": stdout, "stderr": stderr, "interrupted": m.TimedOut || m.Signal != "", "isImage": false}
}

// bashStreams splits the bash tool's text back into stdout and stderr. The
// tool renders stdout, then stderr under a "[stderr]" line ("(no output)"
// when both are empty), then one marker line per outcome the meta records
// (timeout, then signal or non-zero exit); only those markers are removed,
// so output that merely looks like one stays.
func bashStreams(text string, m bashMeta) (stdout, stderr string) {
	var markers []string
	if m.TimedOut {
		markers = append(markers, fmt.Sprintf("[timed out after %dms]", m.TimeoutMs))
	}
	if m.Signal != "" {
		markers = append(markers, "[killed by signal: "+m.Signal+"]")
	} else if m.ExitCode != nil && *m.ExitCode != 0 {
		markers = append(markers, fmt.Sprintf("[exit code: %d]", *m.ExitCode))
	}
	for i := len(markers) - 1; i >= 0; i-- {
		if rest, ok := strings.CutSuffix(text, markers[i]); ok {
			text = rest
			if i > 0 {
				text = strings.TrimSuffix(text, "\n")
			}
		}
	}
	if len(markers) > 0 && strings.HasSuffix(text, "\n") && strings.TrimSuffix(text, "\n") == "(no output)" {
		text = "(no output)"
	}
	if text == "(no output)" {
		return "", ""
	}
	if rest, ok := strings.CutPrefix(text, "[stderr]\n"); ok {
		return "", rest
	}
	if i := strings.Index(text, "\n[stderr]\n"); i >= 0 {
		return text[:i+1], text[i+len("\n[stderr]\n"):]
	}
	return text, ""
}

// readLine is a numbered line of the read tool's output ("%6d\t" + text).
var readLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^ *(\d+)\t(.*)$`) })

// readResponse parses the read tool's envelope (<path>, <content> with
// numbered lines and a footer) into Claude Code's file window.
func readResponse(text, path string) map[string]any {
	body := text
	if i := strings.Index(body, "<content>\n"); i >= 0 {
		body = body[i+len("<content>\n"):]
	}
	body = strings.TrimSuffix(body, "\n</content>")
	var lines []string
	start := 0
	footer := ""
	for _, l := range strings.Split(body, "\n") {
		if m := readLine().FindStringSubmatch(l); m != nil && footer == "" {
			if start == 0 {
				start, _ = strconv.Atoi(m[1])
			}
			lines = append(lines, m[2])
			continue
		}
		if strings.HasPrefix(l, "(") {
			footer += l
		}
	}
	total, _ := fstool.ParseFooter(text)
	if total == 0 && start > 0 {
		total = start + len(lines) - 1
	}
	if start == 0 {
		start = 1
	}
	return map[string]any{"type": "text", "file": map[string]any{
		"filePath": path, "content": strings.Join(lines, "\n"), "numLines": len(lines), "startLine": start, "totalLines": total,
	}}
}

// fileMeta is what write and edit record (tools/fstool).
type fileMeta struct {
	Operation string `json:"operation"`
	Unified   string `json:"unified"`
}

func fileMetaOf(raw json.RawMessage) fileMeta {
	var m fileMeta
	_ = json.Unmarshal(raw, &m)
	return m
}

func writeResponse(c Call, o Outcome) map[string]any {
	args, _ := object(c.Args)
	m := fileMetaOf(o.Meta)
	typ := "update"
	if m.Operation == "create" {
		typ = "create"
	}
	return map[string]any{
		"type": typ, "filePath": AbsPath(c.Cwd, str(args, "file_path")), "content": str(args, "content"),
		"structuredPatch": StructuredPatch(m.Unified), "originalFile": nil, "success": true,
	}
}

func editResponse(c Call, o Outcome) map[string]any {
	args, _ := object(c.Args)
	var all bool
	_ = json.Unmarshal(args["replace_all"], &all)
	return map[string]any{
		"filePath": AbsPath(c.Cwd, str(args, "file_path")), "oldString": str(args, "old_string"), "newString": str(args, "new_string"),
		"originalFile": nil, "structuredPatch": StructuredPatch(fileMetaOf(o.Meta).Unified),
		"userModified": false, "replaceAll": all, "success": true,
	}
}

// Hunk is one hunk of Claude Code's structuredPatch.
type Hunk struct {
	OldStart int      `json:"oldStart"`
	OldLines int      `json:"oldLines"`
	NewStart int      `json:"newStart"`
	NewLines int      `json:"newLines"`
	Lines    []string `json:"lines"`
}

var hunkHeader = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@`) })

// StructuredPatch parses a unified diff into Claude Code's hunks (the
// lines keep their " ", "-" or "+" prefix). It is empty, never nil, for no
// diff.
func StructuredPatch(unified string) []Hunk {
	out := []Hunk{}
	for _, l := range strings.Split(unified, "\n") {
		if m := hunkHeader().FindStringSubmatch(l); m != nil {
			n := func(s string) int {
				if s == "" {
					return 1
				}
				v, _ := strconv.Atoi(s)
				return v
			}
			out = append(out, Hunk{OldStart: n(m[1]), OldLines: n(m[2]), NewStart: n(m[3]), NewLines: n(m[4]), Lines: []string{}})
			continue
		}
		if len(out) == 0 || l == "" || strings.HasPrefix(l, `\`) {
			continue
		}
		switch l[0] {
		case ' ', '-', '+':
			h := &out[len(out)-1]
			h.Lines = append(h.Lines, l)
		}
	}
	return out
}

// globResponse lists the glob tool's files, absolute.
func globResponse(text, cwd string, d time.Duration) map[string]any {
	files := []string{}
	truncated := false
	for _, l := range strings.Split(text, "\n") {
		switch {
		case l == "", strings.HasPrefix(l, "No files found matching "):
		case strings.HasPrefix(l, "(Showing the "):
			truncated = true
		case strings.HasPrefix(l, "(") && strings.HasSuffix(l, ")"):
		default:
			files = append(files, AbsPath(cwd, l))
		}
	}
	return map[string]any{"filenames": files, "durationMs": d.Milliseconds(), "numFiles": len(files), "truncated": truncated}
}

var (
	grepFound = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^Found (\d+) files?$`) })
	grepCount = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^Found (\d+) matching lines? across (\d+) files?$`) })
)

// grepResponse maps the grep tool's text onto Claude Code's Grep result.
func grepResponse(text, cwd, mode string) map[string]any {
	if mode == "" {
		mode = "files_with_matches"
	}
	files := []string{}
	if text == "No matches found" {
		text = ""
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if text == "" {
		lines = nil
	}
	switch mode {
	case "count":
		matches, numFiles := 0, 0
		var kept []string
		for _, l := range lines {
			if m := grepCount().FindStringSubmatch(l); m != nil {
				matches, _ = strconv.Atoi(m[1])
				numFiles, _ = strconv.Atoi(m[2])
				continue
			}
			kept = append(kept, l)
		}
		return map[string]any{"mode": mode, "numFiles": numFiles, "filenames": files, "content": strings.Join(kept, "\n"), "numMatches": matches}
	case "content":
		return map[string]any{"mode": mode, "numFiles": 0, "filenames": files, "content": text, "numLines": len(lines)}
	}
	numFiles := 0
	for _, l := range lines {
		if m := grepFound().FindStringSubmatch(l); m != nil {
			numFiles, _ = strconv.Atoi(m[1])
			continue
		}
		if l != "" {
			files = append(files, AbsPath(cwd, l))
		}
	}
	if numFiles == 0 {
		numFiles = len(files)
	}
	return map[string]any{"mode": mode, "numFiles": numFiles, "filenames": files}
}

// agentResponse is the Agent tool's completed result.
func agentResponse(text string, o Outcome, prompt string) map[string]any {
	var m struct {
		ChildSession string `json:"childSession"`
	}
	_ = json.Unmarshal(o.Meta, &m)
	return map[string]any{
		"status": "completed", "agentId": m.ChildSession, "content": []Block{{Type: "text", Text: text}},
		"totalDurationMs": o.Duration.Milliseconds(), "totalTokens": 0, "totalToolUseCount": 0,
		"usage":  map[string]any{"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": nil, "cache_read_input_tokens": nil},
		"prompt": prompt,
	}
}

func fetchResponse(text string, o Outcome, url string) map[string]any {
	var m struct {
		FinalURL string `json:"finalUrl"`
		Status   int    `json:"status"`
	}
	_ = json.Unmarshal(o.Meta, &m)
	if m.FinalURL != "" {
		url = m.FinalURL
	}
	return map[string]any{"bytes": len(text), "code": m.Status, "codeText": http.StatusText(m.Status), "result": text,
		"durationMs": o.Duration.Milliseconds(), "url": url}
}

func searchResponse(o Outcome, query string) map[string]any {
	var m struct {
		Sources []struct {
			URL   string `json:"url"`
			Title string `json:"title"`
		} `json:"sources"`
	}
	_ = json.Unmarshal(o.Meta, &m)
	links := []map[string]string{}
	for _, s := range m.Sources {
		links = append(links, map[string]string{"title": s.Title, "url": s.URL})
	}
	results := []any{map[string]any{"tool_use_id": "", "content": links}}
	if t := llm.TextOf(o.Content); t != "" {
		results = append(results, t)
	}
	return map[string]any{"query": query, "results": results, "durationSeconds": o.Duration.Seconds()}
}

func object(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil || m == nil {
		return nil, false
	}
	return m, true
}

func str(m map[string]json.RawMessage, k string) string {
	var s string
	_ = json.Unmarshal(m[k], &s)
	return s
}
