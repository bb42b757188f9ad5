package local

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dshq/dsh/bash"
	"github.com/dshq/dsh/sandbox"
	"github.com/dshq/dsh/sandbox/linux"
)

// newSandbox returns a Linux sandbox for this test binary (it re-executes
// itself as the helper: see TestMain), closed at the end of the test.
func newSandbox(t testing.TB) *linux.Sandbox { return newSandboxHome(t, "") }

// newSandboxHome is newSandbox for a home directory (kept visible inside
// even when it lives under /tmp, as the tests' homes do).
func newSandboxHome(t testing.TB, home string) *linux.Sandbox {
	t.Helper()
	sb := linux.New(linux.Options{Grace: testGrace, Home: home})
	t.Cleanup(func() { _ = sb.Close() })
	return sb
}

// buildHelper builds the dedicated helper program, as dsh is shipped: not
// race-built, unlike this test binary (a race-built helper cannot run under
// an address-space limit: the race detector maps memory at any moment).
func buildHelper(t testing.TB) string {
	t.Helper()
	helper := filepath.Join(t.TempDir(), linux.HelperBinary)
	if out, err := exec.Command("go", "build", "-o", helper, "../../cmd/dsh-sandbox-helper").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return helper
}

// requireEnforcing skips where the kernel cannot sandbox (the CI machine
// can: it must not skip there, see TestSandboxEnforcesHere).
func requireEnforcing(t *testing.T, sb *linux.Sandbox) {
	t.Helper()
	if st := sb.Status(); !st.Enforcing {
		t.Skipf("the sandbox does not enforce here: %s", st.Reason)
	}
}

// TestSandboxEnforcesHere pins the facts of the machine CI runs on
// (kernel 6.18, root): every layer is active, with Landlock ABI 7 or more.
// Elsewhere it only logs.
func TestSandboxEnforcesHere(t *testing.T) {
	st := newSandbox(t).Status()
	t.Logf("%+v", st)
	if os.Getenv("CI") == "" && os.Getenv("DSH_SANDBOX_EXPECT_ENFORCING") == "" {
		return
	}
	if !st.Enforcing || st.LandlockABI < 7 {
		t.Fatalf("the sandbox must enforce with Landlock ABI >= 7 on this machine: %+v", st)
	}
}

// escapeEnv is a workspace, a home with a private key, a file outside the
// workspace, and a process outside the sandbox.
type escapeEnv struct {
	ws, home, outside, victim string
	victimPID                 int
	port                      int
}

const secretKey = "-----BEGIN OPENSSH PRIVATE KEY----- sandbox-test-secret"

func newEscapeEnv(t *testing.T) *escapeEnv {
	t.Helper()
	base := t.TempDir()
	env := &escapeEnv{ws: filepath.Join(base, "ws"), home: filepath.Join(base, "home")}
	env.outside = filepath.Join(env.home, "outside.txt")
	must(t, os.MkdirAll(filepath.Join(env.ws, ".git", "hooks"), 0o755))
	must(t, os.WriteFile(filepath.Join(env.ws, ".git", "config"), []byte("[core]\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(env.ws, "secret.txt"), []byte("workspace-secret-value"), 0o644))
	must(t, os.MkdirAll(filepath.Join(env.home, ".ssh"), 0o700))
	must(t, os.WriteFile(filepath.Join(env.home, ".ssh", "id_rsa"), []byte(secretKey), 0o600))
	must(t, os.WriteFile(env.outside, []byte("original"), 0o644))
	victim := exec.Command("sleep", "60")
	must(t, victim.Start())
	t.Cleanup(func() { _ = victim.Process.Kill(); _ = victim.Wait() })
	env.victimPID = victim.Process.Pid
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	must(t, err)
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("HTTP/1.0 200 OK\r\nContent-Length: 22\r\n\r\nhost-loopback-reached\n"))
			_ = c.Close()
		}
	}()
	env.port = l.Addr().(*net.TCPAddr).Port
	return env
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (env *escapeEnv) policy(t *testing.T, mode sandbox.Mode) *sandbox.Policy {
	t.Helper()
	p, err := sandbox.Compile(sandbox.Inputs{
		Mode: mode, Cwd: env.ws, Home: env.home,
		Rules:   []sandbox.PathRule{{Text: "Read(./secret.txt)", Source: "test"}},
		Network: []string{"allowed.test"},
	})
	must(t, err)
	return p
}

// TestSandboxEscapes runs each escape in workspace-write, where the kernel
// must refuse it, and in danger-full-access, where the same command must
// succeed: the refusal is the sandbox's doing, not the command's failing.
func TestSandboxEscapes(t *testing.T) {
	env := newEscapeEnv(t)
	sb := newSandboxHome(t, env.home)
	requireEnforcing(t, sb)
	e := newExec(t, Config{Sandbox: sb})
	hostTmp := filepath.Join(os.TempDir(), fmt.Sprintf("dsh-escape-%d", time.Now().UnixNano()))
	t.Cleanup(func() { _ = os.Remove(hostTmp) })

	type escape struct {
		name string
		cmd  string
		// escaped reports, after the command, whether it got through.
		escaped func(env *escapeEnv, out string) bool
	}
	outsideChanged := func(env *escapeEnv, _ string) bool {
		b, _ := os.ReadFile(env.outside)
		return string(b) != "original"
	}
	printed := func(s string) func(*escapeEnv, string) bool {
		return func(_ *escapeEnv, out string) bool { return strings.Contains(out, s) }
	}
	escapes := []escape{
		{"absolute path", `echo pwned > "$OUTSIDE"`, outsideChanged},
		{"dot-dot", `echo pwned > ../home/outside.txt`, outsideChanged},
		{"symlink", `ln -s "$OUTSIDE" link && echo pwned > link`, outsideChanged},
		{"hard link", `ln "$OUTSIDE" hard && echo pwned > hard`, outsideChanged},
		{"proc self root", `echo pwned > "/proc/self/root$OUTSIDE"`, outsideChanged},
		{"host tmp", `echo pwned > "$HOSTTMP"`, func(*escapeEnv, string) bool { _, err := os.Stat(hostTmp); return err == nil }},
		{"ssh key cat", `cat "$HOME/.ssh/id_rsa"`, printed("sandbox-test-secret")},
		{"ssh key cp", `cp "$HOME/.ssh/id_rsa" k && cat k`, printed("sandbox-test-secret")},
		{"ssh key python", `python3 -c 'import os; print(open(os.environ["HOME"]+"/.ssh/id_rsa").read())'`, printed("sandbox-test-secret")},
		{"ssh key dd", `dd if="$HOME/.ssh/id_rsa" status=none`, printed("sandbox-test-secret")},
		{"read-denied cat", `cat secret.txt`, printed("workspace-secret-value")},
		{"read-denied cp", `cp secret.txt s2 && cat s2`, printed("workspace-secret-value")},
		{"read-denied python", `python3 -c 'print(open("secret.txt").read())'`, printed("workspace-secret-value")},
		{"read-denied dd", `dd if=secret.txt status=none`, printed("workspace-secret-value")},
		{"git hook", `echo 'echo pwned' > .git/hooks/pre-commit`, func(env *escapeEnv, _ string) bool {
			_, err := os.Stat(filepath.Join(env.ws, ".git", "hooks", "pre-commit"))
			return err == nil
		}},
		{"git dir moved aside", `mv .git .git-old && mkdir -p .git/hooks && echo pwned > .git/hooks/pre-commit`, func(env *escapeEnv, _ string) bool {
			_, err := os.Stat(filepath.Join(env.ws, ".git-old"))
			return err == nil
		}},
		{"git config", `echo '[core] hooksPath = /x' >> .git/config`, func(env *escapeEnv, _ string) bool {
			b, _ := os.ReadFile(filepath.Join(env.ws, ".git", "config"))
			return strings.Contains(string(b), "hooksPath")
		}},
		{"host loopback", `python3 -c 'import socket,os; s=socket.create_connection(("127.0.0.1", int(os.environ["PORT"])), 2); print(s.recv(100).decode())'`, printed("host-loopback-reached")},
		{"host loopback via proxy", `curl -sS -m 5 "http://127.0.0.1:$PORT/"`, printed("host-loopback-reached")},
		{"ptrace outside", `python3 -c 'import ctypes,os; l=ctypes.CDLL(None,use_errno=True); pid=int(os.environ["VICTIM"]); r=l.ptrace(16,pid,0,0); print("attached" if r==0 else "refused", ctypes.get_errno()); r==0 and (os.waitpid(pid,0), l.ptrace(17,pid,0,0))'`, printed("attached")},
		{"signal outside", `kill -STOP "$VICTIM" && echo stopped && kill -CONT "$VICTIM"`, printed("stopped")},
		{"proc environ outside", `tr '\0' '\n' < "/proc/$VICTIM/environ" | grep -c . && echo environ-read`, printed("environ-read")},
		{"mount", `mkdir -p m && mount -t tmpfs none m && echo mounted && umount m`, printed("mounted")},
		{"user namespace", `unshare -U true && echo unshared`, printed("unshared")},
		{"user namespace python", `python3 -c 'import ctypes; l=ctypes.CDLL(None,use_errno=True); print("unshared" if l.unshare(0x10000000)==0 else "refused")'`, printed("unshared")},
	}
	for _, mode := range []sandbox.Mode{sandbox.ModeWorkspaceWrite, sandbox.ModeFullAccess} {
		for _, x := range escapes {
			t.Run(string(mode)+"/"+x.name, func(t *testing.T) {
				must(t, os.WriteFile(env.outside, []byte("original"), 0o644))
				for _, f := range []string{"link", "hard", "k", "s2", ".git/hooks/pre-commit"} {
					_ = os.Remove(filepath.Join(env.ws, f))
				}
				if _, err := os.Stat(filepath.Join(env.ws, ".git-old")); err == nil {
					_ = os.RemoveAll(filepath.Join(env.ws, ".git"))
					must(t, os.Rename(filepath.Join(env.ws, ".git-old"), filepath.Join(env.ws, ".git")))
				}
				_ = os.Remove(hostTmp)
				res := run(t, e, bash.ExecRequest{
					Command: x.cmd, Workdir: env.ws, Sandbox: env.policy(t, mode),
					Env: map[string]string{
						"HOME": env.home, "OUTSIDE": env.outside, "HOSTTMP": hostTmp,
						"PORT": strconv.Itoa(env.port), "VICTIM": strconv.Itoa(env.victimPID),
					},
				})
				out := res.Stdout.Text + res.Stderr.Text
				got := x.escaped(env, res.Stdout.Text)
				if mode.Confines() && got {
					t.Fatalf("escaped the sandbox: exit %s\n%s", exitCode(res), out)
				}
				if !mode.Confines() && !got {
					t.Fatalf("did not succeed without the sandbox (so the test proves nothing): exit %s\n%s", exitCode(res), out)
				}
				if mode.Confines() && res.Sandbox == nil {
					t.Fatal("no sandbox report")
				}
			})
		}
	}
}

// TestSandboxOrdinaryWork: what an agent does all day works sandboxed.
func TestSandboxOrdinaryWork(t *testing.T) {
	env := newEscapeEnv(t)
	sb := newSandboxHome(t, env.home)
	requireEnforcing(t, sb)
	e := newExec(t, Config{Sandbox: sb})
	p := env.policy(t, sandbox.ModeWorkspaceWrite)
	for _, c := range []struct{ name, cmd, want string }{
		{"git commit", `git init -q repo && cd repo && git -c user.name=t -c user.email=t@t commit -q --allow-empty -m first && git log --oneline | wc -l`, "1"},
		{"make", `printf 'all:\n\techo built > out.txt\n' > Makefile && make -s && cat out.txt`, "built"},
		{"python script", `printf 'import sys\nprint(sum(range(10)))\n' > s.py && python3 s.py`, "45"},
		{"private tmp", `f=$(mktemp) && echo scratch > "$f" && cat "$f" && echo x > "$TMPDIR/plain" && cat "$TMPDIR/plain"`, "scratch"},
		{"own loopback server", `python3 -c '
import socket,threading
s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen()
threading.Thread(target=lambda: s.accept()[0].send(b"served-inside")).start()
c=socket.create_connection(s.getsockname()); print(c.recv(64).decode())'`, "served-inside"},
		{"go build and test", `mkdir -p gomod && cd gomod && git init -q && printf 'module m\n\ngo 1.22\n' > go.mod && printf 'package main\nimport "fmt"\nfunc main() { fmt.Println("built-by-go") }\n' > main.go && printf 'package main\nimport "testing"\nfunc TestOK(t *testing.T) {}\n' > main_test.go && go build -o app . && ./app && go test -count=1 . && echo poison > "$GOCACHE/poison"`, "built-by-go"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := run(t, e, bash.ExecRequest{Command: c.cmd, Workdir: env.ws, Sandbox: p, Env: map[string]string{"HOME": env.home, "GOCACHE": userGoCache(t)}})
			if res.ExitCode == nil || *res.ExitCode != 0 || !strings.Contains(res.Stdout.Text, c.want) {
				t.Fatalf("exit %s, want output %q:\n%s\n%s", exitCode(res), c.want, res.Stdout.Text, res.Stderr.Text)
			}
		})
	}
}

// userGoCache is the test's own Go build cache: sandboxed builds read it
// (through the cache program) and must never write it.
func userGoCache(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Skipf("go env: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if _, err := os.Stat(filepath.Join(dir, "poison")); err == nil {
			t.Errorf("a sandboxed command wrote the user's Go build cache")
			_ = os.Remove(filepath.Join(dir, "poison"))
		}
	})
	return dir
}

// TestSandboxProxyReports: a domain off the allow-list is refused by the
// proxy, and the refusal is in the command's report.
func TestSandboxProxyReports(t *testing.T) {
	sb := newSandbox(t)
	requireEnforcing(t, sb)
	e := newExec(t, Config{Sandbox: sb})
	env := newEscapeEnv(t)
	res := run(t, e, bash.ExecRequest{Command: `curl -sS -m 5 https://github.io/ ; echo rc=$?`, Workdir: env.ws, Sandbox: env.policy(t, sandbox.ModeWorkspaceWrite)})
	if res.Sandbox == nil || len(res.Sandbox.Blocked) == 0 || !strings.Contains(res.Sandbox.Blocked[0], "blocked github.io:443: not in sandbox.network.allow") {
		t.Fatalf("report %+v\n%s%s", res.Sandbox, res.Stdout.Text, res.Stderr.Text)
	}
}

// daemonScript starts a setsid daemon and a double-forked one, each
// renamed with marker so the test can find their host PIDs.
func daemonScript(marker string) string {
	return fmt.Sprintf(`setsid -f bash -c 'exec -a %[1]s-setsid sleep 600'
python3 -c '
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("bash", ["bash", "-c", "exec -a %[1]s-double sleep 600"])
    os._exit(0)
'
`, marker)
}

// pidsWithMarker lists host PIDs whose command line starts with marker.
func pidsWithMarker(marker string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.HasPrefix(b, []byte(marker)) {
			out = append(out, pid)
		}
	}
	return out
}

// alive reports whether pid is a live (non-zombie) process.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && len(b) > i+2 && b[i+2] != 'Z'
}

// TestSandboxNoDaemonOutlivesItsCommand: after a normal exit, the setsid
// and double-forked daemons the command started are gone, checked by the
// PIDs they had, in every mode.
func TestSandboxNoDaemonOutlivesItsCommand(t *testing.T) {
	sb := newSandbox(t)
	e := newExec(t, Config{Sandbox: sb})
	for _, mode := range []sandbox.Mode{sandbox.ModeWorkspaceWrite, sandbox.ModeFullAccess} {
		t.Run(string(mode), func(t *testing.T) {
			if mode.Confines() {
				requireEnforcing(t, sb)
			}
			ws := t.TempDir()
			p, err := sandbox.Compile(sandbox.Inputs{Mode: mode, Cwd: ws})
			must(t, err)
			marker := fmt.Sprintf("dshdaemon%d", time.Now().UnixNano())
			task, err := e.Start(context.Background(), bash.ExecRequest{
				Command: daemonScript(marker) + "touch ready; sleep 1", Workdir: ws, Sandbox: p,
			})
			must(t, err)
			var pids []int
			deadline := time.Now().Add(10 * time.Second)
			for len(pids) < 2 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
				pids = pidsWithMarker(marker)
			}
			if len(pids) < 2 {
				t.Fatalf("daemons not found: %v", pids)
			}
			<-task.Done
			for _, pid := range pids {
				if alive(pid) {
					t.Errorf("daemon %d outlived its command", pid)
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		})
	}
}

func init() {
	helpers["sandboxed-sleep"] = func() {
		mode := sandbox.Mode(os.Getenv("SANDBOX_MODE"))
		sb := linux.New(linux.Options{Grace: testGrace})
		e, err := New(Config{Sandbox: sb, Grace: testGrace})
		if err != nil {
			panic(err)
		}
		ws := os.Getenv("SANDBOX_WS")
		p, err := sandbox.Compile(sandbox.Inputs{Mode: mode, Cwd: ws})
		if err != nil {
			panic(err)
		}
		_, _ = e.Run(context.Background(), bash.ExecRequest{
			Command: daemonScript(os.Getenv("SANDBOX_MARKER")) + "exec -a " + os.Getenv("SANDBOX_MARKER") + "-fg sleep 603; echo done",
			Workdir: ws, Sandbox: p,
		})
	}
}

// TestSandboxSIGKILLOfDshTakesCommandsDown: dsh (here a helper process
// owning an executor) is SIGKILLed during `sleep 603`; the sleep and both
// daemons die with it, checked by PID.
func TestSandboxSIGKILLOfDshTakesCommandsDown(t *testing.T) {
	sb := newSandbox(t)
	for _, mode := range []sandbox.Mode{sandbox.ModeWorkspaceWrite, sandbox.ModeFullAccess} {
		t.Run(string(mode), func(t *testing.T) {
			if mode.Confines() {
				requireEnforcing(t, sb)
			}
			marker := fmt.Sprintf("dshkill%d", time.Now().UnixNano())
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "DSH_LOCAL_TEST_HELPER=sandboxed-sleep", "SANDBOX_MODE="+string(mode),
				"SANDBOX_WS="+t.TempDir(), "SANDBOX_MARKER="+marker)
			must(t, cmd.Start())
			var pids []int
			// A guard, not a timing: three processes start in a race-built
			// dsh and helper, which a loaded machine can make slow.
			deadline := time.Now().Add(60 * time.Second)
			for len(pids) < 3 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
				pids = pidsWithMarker(marker)
			}
			if len(pids) < 3 {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatalf("processes not found: %v", pids)
			}
			must(t, cmd.Process.Signal(syscall.SIGKILL))
			_ = cmd.Wait()
			deadline = time.Now().Add(5 * time.Second)
			for _, pid := range pids {
				for alive(pid) && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				if alive(pid) {
					t.Errorf("process %d outlived the SIGKILLed dsh", pid)
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		})
	}
}
