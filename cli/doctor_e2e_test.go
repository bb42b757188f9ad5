package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dsh doctor reports what a run would meet: an MCP server that cannot
// start (with its stderr) and a hook type dsh does not run, and exits 1.
func TestDoctorReportsCapabilities(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	cfg := `{"mcpServers":{"broken":{"command":"sh","args":["-c","echo cannot-open-db >&2; exit 3"]}}}`
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, ".claude"), 0o755)
	os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), []byte(`{"hooks":{"Stop":[{"hooks":[{"type":"agent","prompt":"check"}]}]}}`), 0o644)
	r := dsh(t, dir, home, "http://127.0.0.1:1", "", "doctor", "--timeout", "10s")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1: %+v", r.code, r)
	}
	for _, want := range []string{"server broken", "cannot-open-db", `"agent" hook on Stop`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, r.stdout)
		}
	}
	j := dsh(t, dir, home, "http://127.0.0.1:1", "", "doctor", "--json", "--timeout", "10s")
	if !strings.Contains(j.stdout, `"capability": "mcp"`) || !strings.Contains(j.stdout, `"severity": "error"`) {
		t.Errorf("json: %s", j.stdout)
	}
}

// Every front door runs under a soft Go memory limit unless GOMEMLIMIT
// sets one, and dsh doctor says which is in force.
func TestDoctorMemoryLimit(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	r := dsh(t, dir, home, "http://127.0.0.1:1", "", "doctor", "--timeout", "5s")
	if want := "memory limit: Go soft memory limit 64 MiB (default; GOMEMLIMIT overrides)"; !strings.Contains(r.stdout, want) {
		t.Errorf("doctor without GOMEMLIMIT lacks %q:\n%s", want, r.stdout)
	}
	r = invocation{dir: dir, home: home, baseURL: "http://127.0.0.1:1", env: []string{"GOMEMLIMIT=200MiB"}}.run(t, "doctor", "--timeout", "5s")
	if want := "memory limit: Go soft memory limit 200 MiB (GOMEMLIMIT=200MiB)"; !strings.Contains(r.stdout, want) {
		t.Errorf("doctor with GOMEMLIMIT=200MiB lacks %q:\n%s", want, r.stdout)
	}
}
