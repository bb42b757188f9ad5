//go:build linux

package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dsh sandbox explain through the binary: for each command line it shows
// the shell analysis's reading, the permission rules' decision with the
// rule or mode that made it, the sandbox policy's verdict on each file the
// line names (compiled from the same rules), and whether the call asks —
// and why the sandbox did or did not lift the rules' question.
func TestSandboxExplain(t *testing.T) {
	base := t.TempDir()
	ws, home, dshHome := filepath.Join(base, "ws"), filepath.Join(base, "home"), filepath.Join(base, "dsh")
	for _, d := range []string{filepath.Join(ws, ".git", "hooks"), filepath.Join(home, ".ssh"), dshHome} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for name, text := range map[string]string{"README.md": "readme\n", "secret.txt": "s\n"} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dshHome, "settings.json"), []byte(`{"permissions":{"ask":["Bash(git push:*)"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"lifted by the sandbox", nil, []string{"cat README.md ~/.ssh/id_rsa > /etc/dsh-explain.txt && git status"}, []string{
			"  - cat README.md ~/.ssh/id_rsa  (read-only; read README.md; read ~/.ssh/id_rsa)",
			"  - writes > /etc/dsh-explain.txt",
			"permission rules: ask, decided by the mode default",
			"sandbox: workspace-write (enforced by the kernel: linux, Landlock ABI",
			"  read README.md: allowed — reads are allowed everywhere that is not hidden",
			"  read ~/.ssh/id_rsa: refused by the kernel — hidden (reads as empty): secret store",
			"  write > /etc/dsh-explain.txt: refused by the kernel — outside the workspace and every writable directory",
			"approval: runs without asking — runs in the workspace-write sandbox, which the kernel enforces; without the sandbox it would ask",
			"the kernel refuses 2 of the accesses above",
		}},
		{"protected and writable", nil, []string{"echo x > out.txt; echo y > .git/hooks/pre-commit"}, []string{
			"  write > out.txt: allowed — workspace (the session's directory)",
			"  write > .git/hooks/pre-commit: refused by the kernel — read-only: workspace-write keeps it read-only",
		}},
		{"read deny rule compiled into the policy", nil, []string{"--disallowedTools", "Read(./secret.txt)", "--", "od -c secret.txt"}, []string{
			"permission rules: deny, decided by deny rule Read(./secret.txt) (--disallowedTools)",
			"  read secret.txt: refused by the kernel — unreadable: rule Read(./secret.txt) (--disallowedTools)",
			"approval: denied — ",
			"(a deny rule denies whatever the sandbox does)",
		}},
		{"allow rule", nil, []string{"--allowedTools", "Bash(git status:*)", "--", "git status"}, []string{
			"permission rules: allow, decided by allow rule Bash(git status:*) (--allowedTools)",
			"approval: runs without asking — ",
		}},
		{"ask rule", nil, []string{"git push origin main"}, []string{
			"permission rules: ask, decided by ask rule Bash(git push:*) (" + filepath.Join(dshHome, "settings.json") + ")",
			"(an ask rule asks even in the sandbox)",
		}},
		{"plan mode", nil, []string{"--permission-mode", "plan", "--", "touch x"}, []string{
			"decided by the mode plan",
			"approval: denied — plan mode",
		}},
		{"not enforced", []string{"DSH_SANDBOX_DISABLE=landlock"}, []string{"cat README.md"}, []string{
			"sandbox: workspace-write (NOT enforced here: ",
			"approval: asks — ",
			"(the sandbox does not enforce here: ",
		}},
		{"full access", nil, []string{"--sandbox", "danger-full-access", "--", "cat README.md"}, []string{
			"sandbox: danger-full-access (confines nothing)",
			"(danger-full-access confines nothing, so the rules' question stands)",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			iv := invocation{dir: ws, home: dshHome, baseURL: "http://127.0.0.1:1", env: append([]string{"HOME=" + home}, c.env...)}
			args := append([]string{"sandbox", "explain"}, c.args...)
			if !strings.HasPrefix(c.args[0], "-") {
				args = append([]string{"sandbox", "explain", "--"}, c.args...)
			}
			r := iv.run(t, args...)
			if r.code != 0 {
				t.Fatalf("%+v", r)
			}
			for _, w := range c.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("explain does not say %q:\n%s", w, r.stdout)
				}
			}
		})
	}
}
