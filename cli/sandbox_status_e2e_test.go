//go:build linux

package cli_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// dsh sandbox status through the binary tells the truth on this machine
// and with each layer switched off by DSH_SANDBOX_DISABLE: the layer reads
// off and names the switch, "enforcing: yes" appears only while every
// layer a confined mode needs is on (mount and network namespaces,
// Landlock, seccomp), and dsh doctor and explain agree with it.
func TestSandboxStatusThroughTheBinary(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	iv := invocation{dir: dir, home: home, baseURL: "http://127.0.0.1:1"}
	r := iv.run(t, "sandbox", "status", "--json")
	var full struct {
		Mode      string `json:"mode"`
		Enforcing bool   `json:"enforcing"`
		Layers    []struct {
			Name   string `json:"name"`
			Active bool   `json:"active"`
			Detail string `json:"detail"`
		} `json:"layers"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &full); err != nil || r.code != 0 {
		t.Fatalf("status --json: %v\n%+v", err, r)
	}
	if !full.Enforcing {
		t.Skip("the sandbox does not enforce on this machine")
	}
	if full.Mode != "workspace-write" {
		t.Errorf("default mode %q, want workspace-write", full.Mode)
	}
	for _, l := range full.Layers {
		if !l.Active {
			t.Errorf("layer %s is off on an enforcing machine: %s", l.Name, l.Detail)
		}
	}
	required := map[string]bool{"mountns": true, "netns": true, "landlock": true, "seccomp": true}
	names := map[string]string{"userns": "user namespace", "mountns": "mount namespace", "netns": "network namespace",
		"pidns": "pid namespace", "landlock": "landlock", "seccomp": "seccomp"}
	for sw, layer := range names {
		t.Run(sw, func(t *testing.T) {
			off := iv
			off.env = []string{"DSH_SANDBOX_DISABLE=" + sw}
			r := off.run(t, "sandbox", "status")
			if r.code != 0 {
				t.Fatalf("%+v", r)
			}
			if want := "  [off] " + layer + ": disabled by DSH_SANDBOX_DISABLE"; !strings.Contains(r.stdout, want) {
				t.Errorf("status does not say %q:\n%s", want, r.stdout)
			}
			enforcing := strings.Contains(r.stdout, "\nenforcing: yes\n")
			if enforcing == required[sw] {
				t.Errorf("with %s off, enforcing is %v:\n%s", sw, enforcing, r.stdout)
			}
			ex := off.run(t, "sandbox", "explain", "--", "cat", "README.md")
			lifted := strings.Contains(ex.stdout, "approval: runs without asking")
			if lifted != !required[sw] {
				t.Errorf("with %s off, explain lifts the question: %v:\n%s", sw, lifted, ex.stdout)
			}
			doc := off.run(t, "doctor")
			if notEnf := strings.Contains(doc.stdout+doc.stderr, "is NOT enforced here"); notEnf != required[sw] {
				t.Errorf("with %s off, doctor says not enforced: %v:\n%s%s", sw, notEnf, doc.stdout, doc.stderr)
			}
		})
	}
}
