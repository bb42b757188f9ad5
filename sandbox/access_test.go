package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Access answers as the kernel will: hidden paths refuse reads (through a
// symbolic link too), protected paths inside the workspace refuse writes,
// the workspace and allowed directories take them, and writes elsewhere
// are refused except in the private /tmp; danger-full-access allows all.
func TestPolicyAccess(t *testing.T) {
	base := t.TempDir()
	ws, home, extra := filepath.Join(base, "ws"), filepath.Join(base, "home"), filepath.Join(base, "extra")
	for _, d := range []string{filepath.Join(ws, ".git", "hooks"), filepath.Join(home, ".ssh"), extra} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, "secret.txt"), []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(home, ".ssh"), filepath.Join(ws, "keys")); err != nil {
		t.Fatal(err)
	}
	p, err := Compile(Inputs{Mode: ModeWorkspaceWrite, Cwd: ws, Home: home, Rules: []PathRule{
		{Text: "Read(./secret.txt)", Source: "test"},
		{Text: "Edit(" + extra + "/**)", Allow: true, Source: "test"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path  string
		write bool
		ok    bool
		why   string
	}{
		{filepath.Join(ws, "main.go"), false, true, "reads are allowed"},
		{filepath.Join(ws, "main.go"), true, true, "workspace"},
		{filepath.Join(ws, "secret.txt"), false, false, "unreadable: rule Read(./secret.txt)"},
		{filepath.Join(home, ".ssh", "id_rsa"), false, false, "hidden (reads as empty): secret store"},
		{filepath.Join(ws, "keys", "id_rsa"), false, false, "secret store"},
		{filepath.Join(ws, ".git", "hooks", "pre-commit"), true, false, "read-only"},
		{filepath.Join(extra, "out"), true, true, "rule Edit("},
		{filepath.Join(home, "elsewhere"), true, false, "outside the workspace"},
		// The workspace is under /tmp here, so only $TMPDIR of the
		// private /tmp is writable.
		{"/tmp/scratch", true, false, "only in $TMPDIR"},
		{"/tmp/.dsh-tmp/scratch", true, true, "private temporary directory"},
	} {
		ok, why := p.Access(c.path, c.write, ws, home)
		if ok != c.ok || !strings.Contains(why, c.why) {
			t.Errorf("Access(%s, write %v) = %v %q, want %v and %q", c.path, c.write, ok, why, c.ok, c.why)
		}
	}
	full, err := Compile(Inputs{Mode: ModeFullAccess, Cwd: ws, Home: home})
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := full.Access(filepath.Join(home, ".ssh", "id_rsa"), true); !ok {
		t.Error("danger-full-access refused a write")
	}
	ro, err := Compile(Inputs{Mode: ModeReadOnly, Cwd: ws, Home: home})
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := ro.Access(filepath.Join(ws, "main.go"), true, ws, home); ok || !strings.Contains(why, "read-only mode") {
		t.Errorf("read-only mode: write in the workspace = %v %q", ok, why)
	}
	// A workspace outside /tmp: the whole private /tmp is writable.
	away, err := Compile(Inputs{Mode: ModeWorkspaceWrite, Cwd: "/srv/dsh-access-test", Home: "/home/nobody-dsh-test"})
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := away.Access("/tmp/scratch", true, "/srv/dsh-access-test", "/home/nobody-dsh-test"); !ok || !strings.Contains(why, "private /tmp") {
		t.Errorf("a workspace outside /tmp: write in /tmp = %v %q", ok, why)
	}
}
