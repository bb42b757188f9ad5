package fstool

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dshq/dsh/fs"
	"github.com/dshq/dsh/tool"
)

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func fileContent(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestToolsInfo(t *testing.T) {
	f := newFixture(t, true)
	ts := Tools(f.p, f.tr, Options{})
	var names []string
	for _, tl := range ts {
		info := tl.Info()
		names = append(names, info.Name)
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(info.Parameters, &schema); err != nil || schema.Type != "object" || len(schema.Required) == 0 {
			t.Fatalf("%s schema %s: %v", info.Name, info.Parameters, err)
		}
		for _, r := range schema.Required {
			if _, ok := schema.Properties[r]; !ok {
				t.Fatalf("%s requires undeclared %q", info.Name, r)
			}
		}
		if strings.Contains(info.Description, "{") || len(info.Description) < 200 {
			t.Fatalf("%s description not rendered: %q", info.Name, info.Description)
		}
	}
	if strings.Join(names, ",") != "read,write,edit" {
		t.Fatalf("tools = %v", names)
	}
	r, w, e := ts[0].Info(), ts[1].Info(), ts[2].Info()
	if r.Kind != tool.KindRead || !r.ReadOnly || !r.Concurrent {
		t.Fatalf("read info = %+v", r)
	}
	if w.Kind != tool.KindEdit || w.ReadOnly || w.Concurrent || e.Kind != tool.KindEdit || e.ReadOnly || e.Concurrent {
		t.Fatal("write/edit must be non-concurrent edit tools")
	}
	if !strings.Contains(r.Description, "2000 lines") || !strings.Contains(r.Description, "50 KiB") {
		t.Fatalf("read description lacks its limits: %s", r.Description)
	}
	small := Tools(f.p, f.tr, Options{MaxLines: 100})[0].Info()
	if !strings.Contains(small.Description, "100 lines") || !strings.Contains(string(small.Parameters), `"maximum":100`) {
		t.Fatal("options not reflected in description and schema")
	}
}

func TestReadFormat(t *testing.T) {
	f := newFixture(t, true)
	writeFile(t, f.path("a.txt"), "hello\nworld")
	text, _ := f.ok(t, f.read, map[string]any{"file_path": "a.txt"})
	want := "<path>" + f.path("a.txt") + "</path>\n<type>file</type>\n<content>\n" +
		"     1\thello\n     2\tworld\n\n(End of file - total 2 lines)\n</content>"
	if text != want {
		t.Fatalf("got:\n%s\nwant:\n%s", text, want)
	}
	wantFooter(t, text, 2, false)
}

// wantFooter checks that ParseFooter reads back what the tool wrote.
func wantFooter(t *testing.T, text string, total int, more bool) {
	t.Helper()
	if n, m := ParseFooter(text); n != total || m != more {
		t.Fatalf("ParseFooter = %d, %v; want %d, %v, of:\n%s", n, m, total, more, text[max(0, len(text)-300):])
	}
}

func TestReadWindows(t *testing.T) {
	f := newFixture(t, true)
	writeFile(t, f.path("four.txt"), "one\ntwo\nthree\nfour")
	text, _ := f.ok(t, f.read, map[string]any{"file_path": "four.txt", "offset": 2, "limit": 2})
	for _, s := range []string{"     2\ttwo\n", "     3\tthree\n", "(Showing lines 2-3 of 4. Use offset=4 to continue.)"} {
		if !strings.Contains(text, s) {
			t.Fatalf("missing %q in:\n%s", s, text)
		}
	}
	if strings.Contains(text, "\tone") || strings.Contains(text, "\tfour") {
		t.Fatalf("lines outside the window:\n%s", text)
	}
	wantFooter(t, text, 4, true)

	var b strings.Builder
	for range 2000 {
		b.WriteString(strings.Repeat("y", 100) + "\n")
	}
	writeFile(t, f.path("wide.txt"), b.String())
	text, _ = f.ok(t, f.read, map[string]any{"file_path": "wide.txt"})
	if !strings.Contains(text, "(Output capped at 50 KiB. Showing lines 1-506. Use offset=507 to continue.)") {
		t.Fatalf("no cap footer:\n%s", text[len(text)-200:])
	}
	wantFooter(t, text, 0, true)

	writeFile(t, f.path("long.txt"), strings.Repeat("x", 3000)+"\n")
	text, _ = f.ok(t, f.read, map[string]any{"file_path": "long.txt"})
	if !strings.Contains(text, strings.Repeat("x", 2000)+"... (line truncated to 2000 chars)\n") || strings.Contains(text, strings.Repeat("x", 2001)) {
		t.Fatal("long line not truncated at 2000 chars")
	}

	writeFile(t, f.path("empty.txt"), "")
	text, _ = f.ok(t, f.read, map[string]any{"file_path": "empty.txt"})
	if !strings.HasSuffix(text, "<content>\n(End of file - total 0 lines)\n</content>") {
		t.Fatalf("empty file:\n%s", text)
	}
	wantFooter(t, text, 0, false)
	err := f.fail(t, f.read, map[string]any{"file_path": "four.txt", "offset": 9})
	wantFsCode(t, err, fs.CodeNotFound)
	if !strings.Contains(err.Error(), `offset 9 is out of range for "`+f.path("four.txt")+`" (4 lines)`) {
		t.Fatalf("message = %q", err)
	}
	// The line right after the last is out of range too; the last is not.
	f.fail(t, f.read, map[string]any{"file_path": "four.txt", "offset": 5})
	f.ok(t, f.read, map[string]any{"file_path": "four.txt", "offset": 4})
}

func TestReadArgumentErrors(t *testing.T) {
	f := newFixture(t, true)
	writeFile(t, f.path("a.txt"), "x")
	cases := []struct {
		args map[string]any
		msg  string
	}{
		{map[string]any{"file_path": "a.txt", "offset": 0}, "offset must be a positive integer"},
		{map[string]any{"file_path": "a.txt", "offset": 1.5}, "offset must be a positive integer"},
		{map[string]any{"file_path": "a.txt", "limit": 0}, "limit must be a positive integer"},
		{map[string]any{"file_path": "a.txt", "limit": -3}, "limit must be a positive integer"},
		{map[string]any{"file_path": "a.txt", "limit": 99999}, "limit must be less than or equal to 2000"},
		{map[string]any{"file_path": "   "}, "file_path must be a non-empty string"},
	}
	for _, c := range cases {
		wantPlain(t, f.fail(t, f.read, c.args), c.msg)
	}
	err := f.fail(t, f.read, map[string]any{})
	wantCode(t, err, "INVALID_ARGS")
	err = f.fail(t, f.read, map[string]any{"file_path": 42})
	if !strings.Contains(err.Error(), `"file_path" must be a string`) {
		t.Fatalf("type error = %v", err)
	}
	_, err = f.read.Run(context.Background(), tool.Call{Name: "read", Raw: "{not json", Host: f.host})
	wantCode(t, err, "INVALID_ARGS")
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := codeOf(err); got != code {
		t.Fatalf("code = %q, want %q (%v)", got, code, err)
	}
}

func TestReadRefusals(t *testing.T) {
	f := newFixture(t, true)
	writeFile(t, f.path("bin"), "\x00\x01\x02")
	if err := os.Mkdir(f.path("dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	wantFsCode(t, f.fail(t, f.read, map[string]any{"file_path": "bin"}), fs.CodeNotText)
	wantFsCode(t, f.fail(t, f.read, map[string]any{"file_path": "missing"}), fs.CodeNotFound)
	err := f.fail(t, f.read, map[string]any{"file_path": "dir"})
	wantFsCode(t, err, fs.CodeNotRegularFile)
	if !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("message = %q", err)
	}
	writeFile(t, f.path("plain"), "x")
	wantFsCode(t, f.fail(t, f.read, map[string]any{"file_path": "plain/x"}), fs.CodeNotFound)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = call(t, ctx, f.read, f.host, map[string]any{"file_path": "plain"})
	wantFsCode(t, err, fs.CodeAborted)
}

func TestReadInvalidUTF8(t *testing.T) {
	f := newFixture(t, true)
	writeFile(t, f.path("latin1.txt"), "caf\xe9\n")
	text, _ := f.ok(t, f.read, map[string]any{"file_path": "latin1.txt"})
	if !strings.Contains(text, "caf\uFFFD") || !strings.Contains(text, "not valid UTF-8") {
		t.Fatalf("got:\n%s", text)
	}
	err := f.fail(t, f.edit, map[string]any{"file_path": "latin1.txt", "old_string": "caf", "new_string": "CAF"})
	wantFsCode(t, err, fs.CodeNotText)
	if fileContent(t, f.path("latin1.txt")) != "caf\xe9\n" {
		t.Fatal("file changed")
	}
}

func TestReadPaths(t *testing.T) {
	f := newFixture(t, true)
	writeFile(t, f.path("a.txt"), "top\n")
	writeFile(t, f.path("sub/b.txt"), "deep\n")
	sub := newHost("agent-1", f.path("sub"))
	res, err := call(t, context.Background(), f.read, sub, map[string]any{"file_path": "../a.txt"})
	if err != nil || !strings.Contains(resultText(t, res), "<path>"+f.path("a.txt")+"</path>") {
		t.Fatalf("../a.txt from sub: %v", err)
	}
	res, err = call(t, context.Background(), f.read, sub, map[string]any{"file_path": f.path("sub/b.txt")})
	if err != nil || !strings.Contains(resultText(t, res), "\tdeep") {
		t.Fatalf("absolute path: %v", err)
	}
	// No host: the provider's default cwd.
	res, err = call(t, context.Background(), f.read, nil, map[string]any{"file_path": "a.txt"})
	if err != nil || !strings.Contains(resultText(t, res), "\ttop") {
		t.Fatalf("no host: %v", err)
	}
}

// TestReadHugeSparseFile: a window near the start of a 2 GiB file is cheap
// and the footer says the file goes on without claiming a line count.
func TestReadHugeSparseFile(t *testing.T) {
	f := newFixture(t, true)
	var b strings.Builder
	for i := 1; i <= 3000; i++ { // well past the 8 KiB binary sniff
		fmt.Fprintf(&b, "line %d\n", i)
	}
	writeFile(t, f.path("huge.log"), b.String())
	if err := os.Truncate(f.path("huge.log"), 2<<30); err != nil {
		t.Fatal(err)
	}
	text, _ := f.ok(t, f.read, map[string]any{"file_path": "huge.log", "offset": 11, "limit": 10})
	if !strings.Contains(text, "    11\tline 11\n") || !strings.Contains(text, "    20\tline 20\n") ||
		!strings.Contains(text, "(Showing lines 11-20; the file is 2.0 GiB and continues. Use offset=21 to continue.)") {
		t.Fatalf("got:\n%s", text)
	}
	wantFooter(t, text, 0, true)
}

func TestReadPresentCall(t *testing.T) {
	r := newFixture(t, true).read.(tool.CallPresenter)
	cases := []struct {
		args  string
		title string
		line  int
	}{
		{`{"file_path":"src/a.ts","offset":12,"limit":40}`, "Read src/a.ts (12 - 51)", 12},
		{`{"file_path":"a.txt","offset":5}`, "Read a.txt (from line 5)", 5},
		{`{"file_path":"a.txt","limit":10}`, "Read a.txt (1 - 10)", 1},
		{`{"file_path":"a.txt"}`, "Read a.txt", 1},
	}
	for _, c := range cases {
		v := r.PresentCall(json.RawMessage(c.args))
		if v == nil || v.Title != c.title || v.Kind != tool.KindRead || len(v.Locations) != 1 ||
			v.Locations[0].Path != strings.Fields(c.title)[1] || v.Locations[0].Line != c.line {
			t.Fatalf("%s → %+v", c.args, v)
		}
	}
	for _, bad := range []string{`{}`, `{"file_path":""}`, `{"file_path":3}`, `not json`, `null`} {
		if v := r.PresentCall(json.RawMessage(bad)); v != nil {
			t.Fatalf("%s → %+v, want nil", bad, v)
		}
	}
}
