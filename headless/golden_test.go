package headless_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/dshq/dsh/internal/fakeanthropic"
)

// The golden files are Claude Code's documented output for five turns
// (testdata/golden/claude-code/README.md). dsh's stream-json and json for
// the same turns must match them line by line in structure.
func TestClaudeCodeGoldens(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		reply func(e *env) func(fakeanthropic.Request) fakeanthropic.Reply
	}{
		{"text", nil, func(*env) func(fakeanthropic.Request) fakeanthropic.Reply {
			return func(fakeanthropic.Request) fakeanthropic.Reply {
				return fakeanthropic.Reply{Text: "Hello! How can I help you today?"}
			}
		}},
		{"tool_use", nil, func(e *env) func(fakeanthropic.Request) fakeanthropic.Reply {
			return func(req fakeanthropic.Request) fakeanthropic.Reply {
				if len(req.ToolResults()) > 0 {
					return fakeanthropic.Reply{Text: "The file says hello world."}
				}
				return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: "toolu_01A", Name: "read", Input: map[string]string{"file_path": filepath.Join(e.dir, "notes.txt")}}}}
			}
		}},
		{"tool_error", []string{"--disallowedTools", "Bash(rm:*)"}, func(*env) func(fakeanthropic.Request) fakeanthropic.Reply {
			return func(req fakeanthropic.Request) fakeanthropic.Reply {
				if len(req.ToolResults()) > 0 {
					return fakeanthropic.Reply{Text: "I was not allowed to remove it."}
				}
				return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: "toolu_01B", Name: "bash", Input: map[string]string{"command": "rm -rf build", "description": "Remove the build directory"}}}}
			}
		}},
		{"error", nil, func(*env) func(fakeanthropic.Request) fakeanthropic.Reply {
			return func(fakeanthropic.Request) fakeanthropic.Reply {
				return fakeanthropic.Reply{Status: 400, ErrorType: "invalid_request_error", ErrorMsg: "prompt is too long"}
			}
		}},
		{"max_turns", []string{"--max-turns", "1"}, func(e *env) func(fakeanthropic.Request) fakeanthropic.Reply {
			return func(fakeanthropic.Request) fakeanthropic.Reply {
				return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: "toolu_01C", Name: "ls", Input: map[string]string{"path": e.dir}}}}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			golden := readGolden(t, tc.name+".stream.jsonl")
			goldenJSON := readGolden(t, tc.name+".json")
			for _, format := range []string{"stream-json", "json"} {
				e := newEnv(t, nil)
				e.model.SetReply(tc.reply(e))
				if err := os.WriteFile(filepath.Join(e.dir, "notes.txt"), []byte("hello world\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				args := append([]string{"-p", "--output-format", format}, tc.args...)
				r := e.dsh("", append(args, "go")...)
				got := lines(t, r.stdout)
				want := golden
				if format == "json" {
					want = goldenJSON
				}
				if len(got) != len(want) {
					t.Fatalf("%s: %d lines, Claude Code writes %d\ngot:\n%s\nstderr %s", format, len(got), len(want), r.stdout, r.stderr)
				}
				for i := range want {
					var problems []string
					compareShape(fmt.Sprintf("line %d", i+1), want[i], got[i], &problems)
					if len(problems) > 0 {
						t.Errorf("%s line %d differs from Claude Code's:\n  %s\ngot:  %s", format, i+1, strings.Join(problems, "\n  "), mustJSON(got[i]))
					}
				}
			}
		})
	}
}

func readGolden(t *testing.T, name string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "golden", "claude-code", name))
	if err != nil {
		t.Fatal(err)
	}
	return lines(t, string(b))
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// exact are the fields whose values, not only types, must match.
var exact = map[string]bool{"type": true, "subtype": true, "role": true, "is_error": true, "permissionMode": true, "output_style": true}

// dynamicKeys are objects keyed by data (model names).
var dynamicKeys = map[string]bool{"modelUsage": true}

// compareShape reports where got's structure differs from want's: a field
// missing, a value of another JSON type, another type/subtype, content
// blocks of other types.
func compareShape(path string, want, got any, problems *[]string) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*problems = append(*problems, fmt.Sprintf("%s: want an object, got %s", path, kind(got)))
			return
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			gv, ok := g[k]
			if !ok {
				*problems = append(*problems, fmt.Sprintf("%s.%s: missing", path, k))
				continue
			}
			if exact[k] && fmt.Sprint(w[k]) != fmt.Sprint(gv) {
				*problems = append(*problems, fmt.Sprintf("%s.%s = %v, want %v", path, k, gv, w[k]))
				continue
			}
			if dynamicKeys[k] {
				compareValues(path+"."+k, w[k], gv, problems)
				continue
			}
			compareShape(path+"."+k, w[k], gv, problems)
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			*problems = append(*problems, fmt.Sprintf("%s: want an array, got %s", path, kind(got)))
			return
		}
		if len(w) == 0 {
			return
		}
		if path != "" && strings.HasSuffix(path, ".content") && len(g) != len(w) {
			*problems = append(*problems, fmt.Sprintf("%s: %d blocks, want %d", path, len(g), len(w)))
			return
		}
		for i, gv := range g {
			wv := w[0]
			if i < len(w) {
				wv = w[i]
			}
			compareShape(fmt.Sprintf("%s[%d]", path, i), wv, gv, problems)
		}
	case nil:
		// Claude Code writes null here (stop_reason while streaming,
		// parent_tool_use_id on main-thread messages); so must dsh.
		if got != nil {
			*problems = append(*problems, fmt.Sprintf("%s: want null, got %s", path, kind(got)))
		}
	default:
		if kind(want) != kind(got) {
			*problems = append(*problems, fmt.Sprintf("%s: want a %s, got %s", path, kind(want), kind(got)))
		}
	}
}

// compareValues compares every value of an object keyed by data with the
// first value of want's.
func compareValues(path string, want, got any, problems *[]string) {
	w, _ := want.(map[string]any)
	g, ok := got.(map[string]any)
	if !ok {
		*problems = append(*problems, fmt.Sprintf("%s: want an object, got %s", path, kind(got)))
		return
	}
	for _, wv := range w {
		for k, gv := range g {
			compareShape(path+"["+k+"]", wv, gv, problems)
		}
		return
	}
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}
