package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dshq/dsh/cli"
	"github.com/dshq/dsh/internal/tmpfs"
)

// Helpers: a model server that can act between requests, and
// a way to run the binary under a chosen umask or inside a private mount
// namespace (package tmpfs).

// actingModel is the DeepSeek-format server of e2e_test.go plus a hook that
// runs before request n (1-based) is answered, while dsh waits for it.
type actingModel struct {
	deepseek
	mu      sync.Mutex
	n       int
	before  func(n int, body map[string]any)
	history []int // request numbers answered
}

// The hook runs with m.mu held, so what it records is read safely after
// m.locked: the race detector sees no order through the dsh process.
func (m *actingModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	m.n++
	n := m.n
	m.history = append(m.history, n)
	if m.before != nil {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		m.before(n, body)
		r.Body = io.NopCloser(bytes.NewReader(raw))
	}
	m.mu.Unlock()
	m.deepseek.ServeHTTP(w, r)
}

// locked runs f with the hook's lock held.
func (m *actingModel) locked(f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f()
}

// setBefore sets the hook; the server's goroutines read it under m.mu (a
// plain write after the server started is a data race: the race detector
// sees no order through the dsh process and its connection).
func (m *actingModel) setBefore(f func(n int, body map[string]any)) {
	m.mu.Lock()
	m.before = f
	m.mu.Unlock()
}

func (m *actingModel) requestCount() int {
	m.deepseek.mu.Lock()
	defer m.deepseek.mu.Unlock()
	return len(m.deepseek.requests)
}

func newActingModel(t *testing.T, replies ...string) (*actingModel, string) {
	m := &actingModel{deepseek: deepseek{replies: replies}}
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	return m, srv.URL
}

// invocation is one run of the dsh binary.
type invocation struct {
	dir, home, baseURL, stdin string
	umask                     string    // e.g. "022"; "" keeps the test's
	ns                        *tmpfs.FS // run inside this mount namespace
	env                       []string  // extra variables
	keepMode                  bool      // leave the home's mode as the test set it
}

func (iv invocation) run(t *testing.T, args ...string) run {
	t.Helper()
	argv := append([]string{dshBin}, args...)
	if iv.umask != "" {
		argv = append([]string{"sh", "-c", `umask ` + iv.umask + `; exec "$0" "$@"`}, argv...)
	}
	if iv.ns != nil {
		argv = append(iv.ns.Enter(iv.dir), argv...)
	} else if !iv.keepMode {
		// t.TempDir makes 0755 directories; a real home is private.
		_ = os.Chmod(iv.home, 0o700)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = iv.dir
	cmd.Env = append(os.Environ(), "DSH_HOME="+iv.home, "DEEPSEEK_API_KEY=test-key", "DEEPSEEK_BASE_URL="+iv.baseURL,
		"ANTHROPIC_API_KEY=", "OPENAI_API_KEY=", "DSH_MODEL=")
	cmd.Env = append(cmd.Env, iv.env...)
	cmd.Stdin = strings.NewReader(iv.stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return run{out.String(), errb.String(), code}
}

// modes walks root and returns the permission bits of everything in it.
func modes(t *testing.T, root string) map[string]fs.FileMode {
	t.Helper()
	out := map[string]fs.FileMode{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[rel] = fi.Mode()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkPrivate fails for every file of root not 0600 and every directory
// not 0700.
func checkPrivate(t *testing.T, root string, m map[string]fs.FileMode) {
	t.Helper()
	for p, mode := range m {
		switch {
		case p == ".":
			// The test's own temporary directory.
		case mode.IsDir() && mode.Perm() != 0o700:
			t.Errorf("%s: directory mode %04o, want 0700", filepath.Join(root, p), mode.Perm())
		case mode.IsRegular() && mode.Perm() != 0o600:
			t.Errorf("%s: file mode %04o, want 0600", filepath.Join(root, p), mode.Perm())
		}
	}
}

func sqliteSettings(t *testing.T, home string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(`{"sessionStore": "sqlite"}`), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Every file dsh creates under $DSH_HOME is 0600 and every directory 0700
// under umask 022, in both stores: checked while the run is in flight (the
// SQLite WAL and SHM exist only then) and after it.
func TestHomeIsPrivate(t *testing.T) {
	for _, store := range []string{"jsonl", "sqlite"} {
		t.Run(store, func(t *testing.T) {
			dir, home := t.TempDir(), t.TempDir()
			if store == "sqlite" {
				sqliteSettings(t, home)
			}
			var during map[string]fs.FileMode
			m, url := newActingModel(t,
				toolReply("call_1", "bash", map[string]string{"command": "echo hi", "description": "say hi"}),
				textReply("done"))
			m.setBefore(func(n int, _ map[string]any) {
				if n == 2 {
					during = modes(t, home)
				}
			})
			r := invocation{dir: dir, home: home, baseURL: url, umask: "022"}.run(t,
				"-p", "--model", "deepseek/deepseek-chat", "--allowedTools", "Bash(echo:*)", "say hi")
			if r.code != 0 {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
			}
			m.locked(func() {}) // what the hook recorded is visible
			if store == "sqlite" {
				for _, f := range []string{"sessions.db", "sessions.db-wal", "sessions.db-shm"} {
					if _, ok := during[f]; !ok {
						t.Errorf("%s did not exist during the run: %v", f, during)
					}
				}
			}
			checkPrivate(t, home, during)
			after := modes(t, home)
			checkPrivate(t, home, after)
			if len(after) < 4 {
				t.Fatalf("suspiciously few files under the home: %v", after)
			}
		})
	}
}

// State left world-readable by an older dsh (or by hand) is tightened, and
// stderr says what was changed.
func TestHomeWiderModesAreTightened(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	sqliteSettings(t, home)
	_, url := newActingModel(t, textReply("one"), textReply("two"))
	iv := invocation{dir: dir, home: home, baseURL: url}
	if r := iv.run(t, "-p", "--model", "deepseek/deepseek-chat", "hello"); r.code != 0 {
		t.Fatalf("first run: %+v", r)
	}
	db := filepath.Join(home, "sessions.db")
	for _, p := range []string{home, db, filepath.Join(home, "logs")} {
		mode := fs.FileMode(0o644)
		if fi, _ := os.Stat(p); fi.IsDir() {
			mode = 0o755
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	iv.keepMode = true
	r := iv.run(t, "-p", "-c", "--model", "deepseek/deepseek-chat", "again")
	if r.code != 0 {
		t.Fatalf("second run: %+v", r)
	}
	for _, want := range []string{db + " was readable by other users (mode 0644); tightened to 0600",
		home + " was readable by other users (mode 0755); tightened to 0700"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr %q lacks %q", r.stderr, want)
		}
	}
	checkPrivate(t, home, modes(t, home))
	var res []map[string]any
	ls := iv.run(t, "sessions", "--json")
	if err := json.Unmarshal([]byte(ls.stdout), &res); err != nil || len(res) != 1 {
		t.Fatalf("sessions after tightening: %v %s", err, ls.stdout)
	}
}

// A session database that is not one stops every run with an error that
// names the file and says what to do about it.
func TestCorruptDatabaseNamesItsPath(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	sqliteSettings(t, home)
	db := filepath.Join(home, "sessions.db")
	if err := os.WriteFile(db, bytes.Repeat([]byte("garbage, not SQLite\n"), 500), 0o600); err != nil {
		t.Fatal(err)
	}
	_, url := newActingModel(t, textReply("unreachable"))
	iv := invocation{dir: dir, home: home, baseURL: url}
	for _, args := range [][]string{{"-p", "--model", "deepseek/deepseek-chat", "hello"}, {"sessions"}} {
		r := iv.run(t, args...)
		if r.code == 0 || !strings.Contains(r.stderr, db+": file is not a database") || !strings.Contains(r.stderr, "move it aside") {
			t.Errorf("dsh %v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
}

// A headless run refused because another dsh holds its session still gives
// scripts a JSON result naming why.
func TestHeadlessSessionInUseJSON(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	release := make(chan struct{})
	asked := make(chan struct{})
	m, url := newActingModel(t, textReply("first"), textReply("second"))
	m.setBefore(func(n int, _ map[string]any) {
		if n == 2 {
			close(asked)
			<-release
		}
	})
	iv := invocation{dir: dir, home: home, baseURL: url}
	r := iv.run(t, "-p", "--model", "deepseek/deepseek-chat", "--output-format", "json", "hello")
	var first map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &first); err != nil || r.code != 0 {
		t.Fatalf("first run: %v %+v", err, r)
	}
	id := first["session_id"].(string)
	holder := make(chan run, 1)
	go func() { holder <- iv.run(t, "-p", "-r", id, "--model", "deepseek/deepseek-chat", "again") }()
	<-asked // the holder has the session and waits for the model
	refused := iv.run(t, "-p", "-r", id, "--model", "deepseek/deepseek-chat", "--output-format", "json", "me too")
	close(release)
	if h := <-holder; h.code != 0 {
		t.Fatalf("holder: %+v", h)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(refused.stdout), &res); err != nil {
		t.Fatalf("refused run printed no JSON result: %v %+v", err, refused)
	}
	if refused.code == 0 || res["is_error"] != true || res["subtype"] != "error_during_execution" || res["error_kind"] != "session_in_use" || res["session_id"] != id ||
		!strings.Contains(fmt.Sprint(res["errors"]), "in use by another dsh process") || !strings.Contains(refused.stderr, "in use") {
		t.Fatalf("refused run: exit %d result %v stderr %q", refused.code, res, refused.stderr)
	}
}

// A failed turn's JSON result is Claude Code's for a failed model call
// (success with is_error, the error as the result) and names the kind of
// error in error_kind.
func TestHeadlessErrorSubtype(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"invalid api key","type":"authentication_error"}}`, http.StatusUnauthorized)
	}))
	defer srv.Close()
	r := invocation{dir: t.TempDir(), home: t.TempDir(), baseURL: srv.URL}.run(t,
		"-p", "--model", "deepseek/deepseek-chat", "--output-format", "json", "hello")
	var res map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("%v %+v", err, r)
	}
	if r.code != 1 || res["subtype"] != "success" || res["is_error"] != true || res["error_kind"] != "auth" || res["terminal_reason"] != "api_error" ||
		!strings.Contains(fmt.Sprint(res["result"]), "invalid api key") {
		t.Fatalf("exit %d result %v", r.code, res)
	}
}

// A log with a garbage line in its middle cannot be exported as it is, but
// --salvage writes every readable event and names the damaged line.
func TestExportSalvage(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	_, url := newActingModel(t, textReply("first answer"), textReply("second answer"))
	iv := invocation{dir: dir, home: home, baseURL: url}
	r := iv.run(t, "-p", "--model", "deepseek/deepseek-chat", "--output-format", "json", "first prompt")
	var res map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("%v %+v", err, r)
	}
	id := res["session_id"].(string)
	if r := iv.run(t, "-p", "-c", "--model", "deepseek/deepseek-chat", "second prompt"); r.code != 0 {
		t.Fatalf("second turn: %+v", r)
	}
	intact := iv.run(t, "sessions", "export", id)
	if intact.code != 0 {
		t.Fatalf("export: %+v", intact)
	}
	want := strings.Split(strings.TrimSpace(intact.stdout), "\n")
	logs, _ := filepath.Glob(filepath.Join(home, "sessions", "*", "*.jsonl"))
	if len(logs) != 1 {
		t.Fatalf("logs %v", logs)
	}
	b, err := os.ReadFile(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	mid := len(lines) / 2
	damaged := strings.Join(lines[:mid], "") + "\x00\x17 not json at all {\n" + strings.Join(lines[mid:], "")
	if err := os.WriteFile(logs[0], []byte(damaged), 0o600); err != nil {
		t.Fatal(err)
	}

	plain := iv.run(t, "sessions", "export", id)
	if plain.code == 0 || !strings.Contains(plain.stderr, "--salvage") {
		t.Fatalf("export of a damaged log: %+v", plain)
	}
	sv := iv.run(t, "sessions", "export", "--salvage", id)
	if sv.code != 0 {
		t.Fatalf("salvage: %+v", sv)
	}
	got := strings.Split(strings.TrimSpace(sv.stdout), "\n")
	if len(got) != len(want) {
		t.Fatalf("salvage wrote %d lines, the intact export %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("line %d differs:\n got %s\nwant %s", i+1, got[i], want[i])
		}
	}
	if wantLine := fmt.Sprintf("line %d", mid+1); !strings.Contains(sv.stderr, logs[0]+": "+wantLine) || !strings.Contains(sv.stderr, "1 damaged range") {
		t.Fatalf("salvage report %q lacks %s", sv.stderr, wantLine)
	}
}

// countingWriter counts Write calls: on a real stdout each is a system call.
type countingWriter struct {
	bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) { w.writes++; return w.Buffer.Write(p) }

// `dsh sessions` listings, transcripts and exports are written in a few
// large writes, not one (or several) per line.
func TestSessionsOutputIsBuffered(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	_, url := newActingModel(t, textReply("first answer"), textReply("second answer"), textReply("third answer"))
	iv := invocation{dir: dir, home: home, baseURL: url}
	r := iv.run(t, "-p", "--model", "deepseek/deepseek-chat", "--output-format", "json", "first prompt")
	var res map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("%v %+v", err, r)
	}
	id := res["session_id"].(string)
	iv.run(t, "-p", "-c", "--model", "deepseek/deepseek-chat", "second prompt")
	iv.run(t, "-p", "--model", "deepseek/deepseek-chat", "another session")
	env := func(k string) string {
		if k == "DSH_HOME" {
			return home
		}
		return os.Getenv(k)
	}
	for _, args := range [][]string{{"sessions"}, {"sessions", "show", id}, {"sessions", "export", id}} {
		var out countingWriter
		var errb bytes.Buffer
		if code := cli.Main(args, cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb, Env: env}); code != 0 {
			t.Fatalf("dsh %v: exit %d: %s", args, code, errb.String())
		}
		if lines := strings.Count(out.String(), "\n"); lines < 3 || out.writes != 1 {
			t.Errorf("dsh %v wrote %d lines in %d writes, want one write", args, lines, out.writes)
		}
	}
}

// Provider streams that end oddly, through the binary: a complete answer
// whose stream lacks [DONE] is kept; an event over the size limit, and a
// Retry-After beyond what dsh waits, end the run with an error that says
// so.
func TestHeadlessStreamEdges(t *testing.T) {
	withoutDone := strings.TrimSuffix(textReply("complete, but no DONE marker"), "data: [DONE]\n\n")
	huge := "data: " + `{"id":"x","object":"chat.completion.chunk","model":"deepseek-chat","choices":[{"index":0,"delta":{"content":"` +
		strings.Repeat("h", 17<<20) + `"}}]}` + "\n\n"
	for _, tc := range []struct {
		name   string
		serve  func(w http.ResponseWriter)
		code   int
		stdout string
		stderr string
	}{
		{"no [DONE]", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, withoutDone)
		}, 0, "complete, but no DONE marker", ""},
		{"huge event", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, huge)
		}, 1, "", "an event or line over the size limit of 16 MiB"},
		{"retry-after", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "900")
			http.Error(w, `{"error":{"message":"slow down","type":"rate_limit_error"}}`, http.StatusTooManyRequests)
		}, 1, "", "the provider asked to wait 15m0s before retrying"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { tc.serve(w) }))
			defer srv.Close()
			r := invocation{dir: t.TempDir(), home: t.TempDir(), baseURL: srv.URL}.run(t, "-p", "--model", "deepseek/deepseek-chat", "hello")
			if r.code != tc.code || strings.TrimSpace(r.stdout) != tc.stdout || !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// A command that prints binary data: the model is told its size and where
// it was saved, not sent fifteen thousand replacement characters.
func TestHeadlessBinaryCommandOutput(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	blob := make([]byte, 15632)
	for i := range blob {
		blob[i] = byte(i*7919 + i/13)
	}
	if err := os.WriteFile(filepath.Join(dir, "blob.bin"), blob, 0o600); err != nil {
		t.Fatal(err)
	}
	m, url := newActingModel(t,
		toolReply("call_1", "bash", map[string]string{"command": "cat blob.bin", "description": "print the blob"}),
		textReply("that was binary"))
	const prefix = "[binary output, 15,632 bytes, saved to "
	var result string
	var saved []byte
	var savedErr error
	m.setBefore(func(n int, body map[string]any) {
		if n != 2 {
			return
		}
		for _, msg := range body["messages"].([]any) {
			if mm := msg.(map[string]any); mm["role"] == "tool" {
				result = mm["content"].(string)
			}
		}
		// The file exists while the session runs (dsh removes its spill
		// directory when it exits).
		saved, savedErr = os.ReadFile(strings.TrimSuffix(strings.TrimPrefix(result, prefix), "]"))
	})
	r := invocation{dir: dir, home: home, baseURL: url}.run(t, "-p", "--model", "deepseek/deepseek-chat", "--allowedTools", "Bash(cat:*)", "show blob.bin")
	if r.code != 0 {
		t.Fatalf("%+v", r)
	}
	m.locked(func() {}) // what the hook recorded is visible
	if !strings.HasPrefix(result, prefix) || strings.ContainsRune(result, '\uFFFD') || len(result) > 300 {
		t.Fatalf("the model was sent %d bytes: %.300q", len(result), result)
	}
	if savedErr != nil || !bytes.Equal(saved, blob) {
		t.Fatalf("the saved file holds %d bytes (%v)", len(saved), savedErr)
	}
}
