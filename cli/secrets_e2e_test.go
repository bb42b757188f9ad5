package cli_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHeadlessSecretsNeverRecorded: dsh -p runs a command that prints a
// secret the settings hand to commands and a project file that repeats a
// credential of dsh's own environment; in both stores the log's bytes,
// the stream-json output, the model's next request and the HTML trace
// carry neither value, and the result says where they were.
func TestHeadlessSecretsNeverRecorded(t *testing.T) {
	const service = "svc-pw-9e1d4c7a2f6b8035"
	const envSecret = "env-secret-0a7c3e9f5b1d"
	for _, store := range []string{"jsonl", "sqlite"} {
		t.Run(store, func(t *testing.T) {
			dir, home := t.TempDir(), t.TempDir()
			settingsJSON := `{"sessionStore": "` + store + `", "env": {"DSH_TEST_SERVICE_TOKEN": "` + service + `"}}`
			if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(settingsJSON), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "deploy.env"), []byte("DEPLOY_PASSWORD="+envSecret+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			ds := &deepseek{replies: []string{
				toolReply("call_1", "bash", map[string]string{"command": `echo "service=$DSH_TEST_SERVICE_TOKEN"; cat deploy.env >&2; false`, "description": "print secrets"}),
				textReply("done"),
			}}
			srv := httptest.NewServer(ds)
			defer srv.Close()
			r := invocation{dir: dir, home: home, baseURL: srv.URL, env: []string{"DSH_TEST_DEPLOY_PASSWORD=" + envSecret}}.run(t,
				"-p", "--model", "deepseek/deepseek-chat", "--output-format", "stream-json", "--verbose",
				"--permission-mode", "bypassPermissions", "--sandbox", "danger-full-access", "show the secrets")
			if r.code != 0 {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
			}
			var id string
			for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
				var m map[string]any
				if json.Unmarshal([]byte(l), &m) == nil && m["session_id"] != nil {
					id, _ = m["session_id"].(string)
				}
			}
			ds.mu.Lock()
			sent, _ := json.Marshal(ds.requests)
			ds.mu.Unlock()
			if !bytes.Contains(sent, []byte("service=[REDACTED]")) || !bytes.Contains(sent, []byte("DEPLOY_PASSWORD=[REDACTED]")) {
				t.Errorf("the model was not sent the scrubbed result: %s", sent)
			}
			trace := dsh(t, dir, home, srv.URL, "", "sessions", "show", id, "--html")
			if trace.code != 0 || !strings.Contains(trace.stdout, "DEPLOY_PASSWORD") {
				t.Fatalf("sessions show --html: %d %s", trace.code, trace.stderr)
			}
			var stored []byte
			_ = filepath.WalkDir(home, func(path string, d fs.DirEntry, err error) error {
				if d != nil && d.IsDir() && path == filepath.Join(home, "checkpoints", "objects") {
					return filepath.SkipDir // the project's files as they are
				}
				if err == nil && !d.IsDir() && d.Name() != "settings.json" {
					b, _ := os.ReadFile(path)
					stored = append(stored, b...)
				}
				return nil
			})
			if len(stored) == 0 {
				t.Fatal("nothing stored")
			}
			for name, b := range map[string][]byte{"stdout": []byte(r.stdout), "stderr": []byte(r.stderr), "the model's requests": sent,
				"the store's files": stored, "the HTML trace": []byte(trace.stdout)} {
				for _, s := range []string{service, envSecret} {
					if bytes.Contains(b, []byte(s)) {
						t.Errorf("%s carries the secret %q", name, s)
					}
				}
			}
		})
	}
}
