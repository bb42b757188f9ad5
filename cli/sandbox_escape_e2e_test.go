//go:build linux

package cli_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The kernel sandbox through the real binary: a scripted model asks dsh,
// headless (no approver), for each escape of issue 20 in workspace-write
// with the permission layer's decision forced to allow (the dshtest build's
// DSH_TEST_PERMISSION=allow), so that only the kernel stands in the way;
// and for the same commands in danger-full-access, where they must
// succeed — the refusal is the sandbox's doing, not the command failing.

// sandboxBox is one dsh run's world: a git workspace, a home with a
// private key, files outside the workspace, a loopback HTTP server and a
// DNS server on the host, and an /etc/hosts of dsh's own (dsh runs in a
// private mount namespace, so blocked.test and registry.test resolve to
// loopback for it and its proxy without touching the machine's file).
type sandboxBox struct {
	base, ws, home, dshHome, outside, hostTmp string
	port, dnsPort                             int
	hosts                                     string
	env                                       []string
	daemons                                   *daemonWatch
}

const escapeSecret = "sandbox-escape-secret-7d2f"

func newSandboxBox(t *testing.T) *sandboxBox {
	t.Helper()
	base := t.TempDir()
	b := &sandboxBox{base: base, ws: filepath.Join(base, "ws"), home: filepath.Join(base, "home"), dshHome: filepath.Join(base, "dsh")}
	b.outside = filepath.Join(b.home, "outside")
	b.hostTmp = filepath.Join(os.TempDir(), fmt.Sprintf("dsh-escape-%d", time.Now().UnixNano()))
	t.Cleanup(func() { _ = os.Remove(b.hostTmp) })
	for _, d := range []string{b.ws, b.outside, filepath.Join(b.home, ".ssh"), b.dshHome} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(b.home, ".ssh", "id_rsa"), "-----BEGIN OPENSSH PRIVATE KEY----- "+escapeSecret+"-ssh\n")
	write(filepath.Join(b.ws, "secret.txt"), escapeSecret+"-workspace\n")
	for _, f := range []string{"abs", "dotdot", "symlink", "hard", "procroot"} {
		write(filepath.Join(b.outside, f+".txt"), "original")
	}
	git := exec.Command("git", "init", "-q")
	git.Dir = b.ws
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}

	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			// One write: headers and body together (no Nagle delay).
			_, _ = c.Write([]byte("HTTP/1.0 200 OK\r\nContent-Length: 22\r\n\r\nhost-loopback-reached\n"))
			_ = c.Close()
		}
	}()
	b.port = l.Addr().(*net.TCPAddr).Port
	b.dnsPort = fakeDNS(t)

	b.hosts = filepath.Join(base, "hosts")
	write(b.hosts, "127.0.0.1 localhost\n127.0.0.1 blocked.test registry.test\n")
	b.env = []string{"HOME=" + b.home, "OUTSIDE=" + b.outside, "HOSTTMP=" + b.hostTmp,
		"PORT=" + strconv.Itoa(b.port), "DNSPORT=" + strconv.Itoa(b.dnsPort)}
	return b
}

// fakeDNS answers every A query on a loopback UDP port with 192.0.2.1.
func fakeDNS(t *testing.T) int {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if n < 12 {
				continue
			}
			q := buf[:n]
			var resp bytes.Buffer
			resp.Write(q[:2])                                      // id
			resp.Write([]byte{0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0}) // flags, 1 question, 1 answer
			resp.Write(q[12:])                                     // the question
			resp.Write([]byte{0xc0, 0x0c, 0, 1, 0, 1})             // name (pointer), A, IN
			_ = binary.Write(&resp, binary.BigEndian, uint32(60))
			resp.Write([]byte{0, 4, 192, 0, 2, 1})
			_, _ = pc.WriteTo(resp.Bytes(), from)
		}
	}()
	return pc.LocalAddr().(*net.UDPAddr).Port
}

func (b *sandboxBox) settings(t *testing.T, s map[string]any) {
	t.Helper()
	raw, _ := json.Marshal(s)
	if err := os.WriteFile(filepath.Join(b.dshHome, "settings.json"), raw, 0o600); err != nil {
		t.Fatal(err)
	}
}

// boxRun is one headless dsh run of a script of bash commands.
type boxRun struct {
	stdout, stderr string
	code           int
	results        []string // the tool result the model read, per command
	requests       []map[string]any
}

// runOptions configure one dsh run in the box.
type runOptions struct {
	mode     string   // --sandbox
	commands []string // each one bash call; "{DSHPID}" becomes dsh's pid
	// forceAllow forces the permission layer's decision to allow (the
	// dshtest build's switch), so only the kernel stands in the way.
	forceAllow bool
	env        []string // more environment variables
	// during runs while dsh does, with its pid, until exited closes.
	during func(pid int, exited <-chan struct{})
}

// run starts dsh headless in the box, the permission layer's decision
// forced to allow, and runs the commands.
func (b *sandboxBox) run(t *testing.T, mode string, commands []string, extra []string, during func(pid int, exited <-chan struct{})) boxRun {
	t.Helper()
	return b.runWith(t, runOptions{mode: mode, commands: commands, forceAllow: true, env: extra, during: during})
}

func (b *sandboxBox) runWith(t *testing.T, o runOptions) boxRun {
	t.Helper()
	mode, commands, during := o.mode, o.commands, o.during
	m, url := newActingModel(t)
	var pid atomic.Int64
	m.setBefore(func(n int, _ map[string]any) {
		if n != 1 {
			return
		}
		p := strconv.FormatInt(pid.Load(), 10)
		var replies []string
		for i, c := range commands {
			replies = append(replies, toolReply(fmt.Sprintf("call_%d", i), "bash", map[string]any{
				"command": strings.ReplaceAll(c, "{DSHPID}", p), "description": "try", "timeoutMs": 60000}))
		}
		m.setReplies(append(replies, textReply("done"))...)
	})
	argv := []string{"unshare", "-m", "--propagation", "private", "--", "sh", "-c", `mount --bind "$0" /etc/hosts && exec "$@"`, b.hosts,
		dshBin, "-p", "--model", "deepseek/deepseek-chat", "--sandbox", mode, "--max-turns", "100", "go"}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = b.ws
	cmd.Env = append(os.Environ(), "DSH_HOME="+b.dshHome, "DEEPSEEK_API_KEY=test-key", "DEEPSEEK_BASE_URL="+url,
		"ANTHROPIC_API_KEY=", "OPENAI_API_KEY=", "DSH_MODEL=")
	if o.forceAllow {
		cmd.Env = append(cmd.Env, "DSH_TEST_PERMISSION=allow")
	}
	cmd.Env = append(append(cmd.Env, b.env...), o.env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid.Store(int64(cmd.Process.Pid))
	exited := make(chan struct{})
	var wg sync.WaitGroup
	if during != nil {
		wg.Go(func() { during(cmd.Process.Pid, exited) })
	}
	err := cmd.Wait()
	close(exited)
	wg.Wait()
	r := boxRun{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	m.deepseek.mu.Lock()
	r.requests = m.deepseek.requests
	m.deepseek.mu.Unlock()
	for i := range commands {
		if i+1 >= len(r.requests) {
			break
		}
		res, _ := toolResult(r.requests[i+1], fmt.Sprintf("call_%d", i))
		r.results = append(r.results, res)
	}
	return r
}

// complete fails the test unless every command's result reached the model.
func (r boxRun) complete(t *testing.T, commands int) {
	t.Helper()
	if r.code != 0 || len(r.results) != commands {
		t.Fatalf("dsh exited %d after %d model requests for %d commands\nstdout: %s\nstderr: %s", r.code, len(r.requests), commands, r.stdout, r.stderr)
	}
}

// escapeCase is one way out of the sandbox.
type escapeCase struct {
	name string
	cmd  string
	// escaped reports whether the command got through, from what the
	// model read and the state of the box afterwards.
	escaped func(b *sandboxBox, result string) bool
	// contained: the command must not get through in danger-full-access
	// either (processes left behind are stopped in every mode).
	contained bool
}

func TestSandboxEscapesThroughTheBinary(t *testing.T) {
	t.Parallel()
	changed := func(name string) func(*sandboxBox, string) bool {
		return func(b *sandboxBox, _ string) bool {
			got, _ := os.ReadFile(filepath.Join(b.outside, name))
			return string(got) != "original"
		}
	}
	shows := func(s string) func(*sandboxBox, string) bool {
		return func(_ *sandboxBox, res string) bool { return strings.Contains(res, s) }
	}
	ssh, ws := escapeSecret+"-ssh", escapeSecret+"-workspace"
	cases := []escapeCase{
		{name: "write by absolute path", cmd: `echo pwned > "$OUTSIDE/abs.txt"`, escaped: changed("abs.txt")},
		{name: "write through ..", cmd: `echo pwned > ../home/outside/dotdot.txt`, escaped: changed("dotdot.txt")},
		{name: "write through a symlink", cmd: `ln -sf "$OUTSIDE/symlink.txt" link && echo pwned > link`, escaped: changed("symlink.txt")},
		{name: "write through a hard link", cmd: `ln -f "$OUTSIDE/hard.txt" hard && echo pwned > hard`, escaped: changed("hard.txt")},
		{name: "write through /proc/self/root", cmd: `echo pwned > "/proc/self/root$OUTSIDE/procroot.txt"`, escaped: changed("procroot.txt")},
		{name: "write the host's /tmp", cmd: `echo pwned > "$HOSTTMP"`, escaped: func(b *sandboxBox, _ string) bool { _, err := os.Stat(b.hostTmp); return err == nil }},
		{name: "read ~/.ssh/id_rsa with cat", cmd: `cat "$HOME/.ssh/id_rsa"`, escaped: shows(ssh)},
		{name: "read ~/.ssh/id_rsa with cp", cmd: `cp "$HOME/.ssh/id_rsa" k1 && cat k1`, escaped: shows(ssh)},
		{name: "read ~/.ssh/id_rsa with python3", cmd: `python3 -c 'import os; print(open(os.path.expanduser("~/.ssh/id_rsa")).read())'`, escaped: shows(ssh)},
		{name: "read ~/.ssh/id_rsa with dd", cmd: `dd if="$HOME/.ssh/id_rsa" status=none`, escaped: shows(ssh)},
		{name: "read a Read-denied file with cat", cmd: `cat secret.txt`, escaped: shows(ws)},
		{name: "read a Read-denied file with cp", cmd: `cp secret.txt k2 && cat k2`, escaped: shows(ws)},
		{name: "read a Read-denied file with python3", cmd: `python3 -c 'print(open("secret.txt").read())'`, escaped: shows(ws)},
		{name: "read a Read-denied file with dd", cmd: `dd if=secret.txt status=none`, escaped: shows(ws)},
		{name: "write .git/hooks/pre-commit", cmd: `printf '#!/bin/sh\nexit 0\n' > .git/hooks/pre-commit`, escaped: func(b *sandboxBox, _ string) bool {
			_, err := os.Stat(filepath.Join(b.ws, ".git", "hooks", "pre-commit"))
			return err == nil
		}},
		{name: "connect to a host loopback port", cmd: `python3 -c 'import socket,os; s=socket.create_connection(("127.0.0.1", int(os.environ["PORT"])), 5); print(s.recv(100).decode())'`, escaped: shows("host-loopback-reached")},
		{name: "reach a host loopback port through the proxy", cmd: `curl -sS -m 20 --noproxy '' --proxy "${HTTP_PROXY:-}" "http://127.0.0.1:$PORT/"`, escaped: shows("host-loopback-reached")},
		{name: "reach a domain not on the allow-list through the proxy", cmd: `curl -sS -m 20 "http://blocked.test:$PORT/"`, escaped: shows("host-loopback-reached")},
		{name: "reach a domain not on the allow-list through the proxy's SOCKS5", cmd: `curl -sS -m 20 --proxy "${ALL_PROXY:-}" "http://blocked.test:$PORT/"`, escaped: shows("host-loopback-reached")},
		{name: "resolve a domain with a DNS server on the host", cmd: `python3 -c '
import socket, os
q = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00" + b"".join(bytes([len(p)]) + p.encode() for p in "blocked.test".split(".")) + b"\x00\x00\x01\x00\x01"
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(10)
s.connect(("127.0.0.1", int(os.environ["DNSPORT"]))); s.send(q); r = s.recv(512)
print("resolved", ".".join(str(b) for b in r[-4:]))'`, escaped: shows("resolved 192.0.2.1")},
		{name: "ptrace dsh", cmd: `python3 -c '
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
pid = {DSHPID}
if libc.ptrace(16, pid, 0, 0) != 0:
    sys.exit("ptrace: " + os.strerror(ctypes.get_errno()))
os.waitpid(pid, 0x40000000)
libc.ptrace(17, pid, 0, 0)
print("attached to dsh")'`, escaped: shows("attached to dsh")},
		{name: "gdb -p dsh", cmd: `gdb -nx -batch -readnever -p {DSHPID} -ex detach 2>&1 | tail -5; test "${PIPESTATUS[0]}" = 0`, escaped: shows("detached]")},
		{name: "signal dsh", cmd: `kill -0 {DSHPID} && echo signalled-dsh`, escaped: shows("signalled-dsh")},
		{name: "read dsh's environment through /proc", cmd: `cat /proc/{DSHPID}/environ > /dev/null && echo read-dsh-environ`, escaped: shows("read-dsh-environ")},
		{name: "mount", cmd: `mkdir -p m && mount -t tmpfs none m && echo mounted-tmpfs && umount m`, escaped: shows("mounted-tmpfs")},
		{name: "create a user namespace", cmd: `unshare -U true && echo made-user-namespace`, escaped: shows("made-user-namespace")},
		{name: "leave a daemon behind", cmd: daemonScript("DSHMARK") + `for i in $(seq 600); do [ -e daemons-seen ] && break; sleep 0.1; done; echo daemons-started`,
			escaped: func(b *sandboxBox, _ string) bool { return b.daemons.outlived() }, contained: true},
	}
	for _, mode := range []string{"workspace-write", "danger-full-access"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			b := newSandboxBox(t)
			b.settings(t, map[string]any{
				"permissions": map[string]any{"deny": []string{"Read(./secret.txt)"}},
				"sandbox":     map[string]any{"network": map[string]any{"allow": []string{"allowed.test"}}},
			})
			marker := fmt.Sprintf("dshesc%d", time.Now().UnixNano()%1e9)
			var cmds []string
			for _, c := range cases {
				cmds = append(cmds, strings.ReplaceAll(c.cmd, "DSHMARK", marker))
			}
			w := &daemonWatch{marker: marker, ready: filepath.Join(b.ws, "daemons-seen")}
			b.daemons = w
			r := b.run(t, mode, cmds, nil, func(_ int, exited <-chan struct{}) { w.watch(2, exited) })
			r.complete(t, len(cmds))
			confined := mode == "workspace-write"
			for i, c := range cases {
				res := r.results[i]
				got := c.escaped(b, res)
				switch {
				case confined && got:
					t.Errorf("%s: escaped the sandbox; the model read:\n%s", c.name, res)
				case confined && !strings.Contains(res, "[sandbox:"):
					t.Errorf("%s: refused, but the model was not told the sandbox did it:\n%s", c.name, res)
				case !confined && c.contained && got:
					t.Errorf("%s: outlived its command in %s:\n%s", c.name, mode, res)
				case !confined && !c.contained && !got:
					t.Errorf("%s: did not succeed in %s, so the refusal proves nothing; the model read:\n%s", c.name, mode, res)
				}
			}
			if want := fmt.Sprintf("sandbox: blocked blocked.test:%d: not in sandbox.network.allow", b.port); confined && !strings.Contains(r.stderr, want) {
				t.Errorf("the user was not told of the refused request (%q); stderr:\n%s", want, r.stderr)
			}
			if confined {
				for i, req := range r.requests {
					if raw, _ := json.Marshal(req); bytes.Contains(raw, []byte(escapeSecret)) {
						t.Errorf("request %d to the model holds a secret", i)
					}
				}
			}
			if len(w.pids) < 2 {
				t.Errorf("the daemons were never seen running (%v)", w.pids)
			}
		})
	}
}

// daemonScript starts a setsid daemon and a double-forked one, named
// after marker so their host PIDs can be found.
func daemonScript(marker string) string {
	return fmt.Sprintf(`setsid -f bash -c 'exec -a %[1]s-setsid sleep 600'
python3 -c '
import os
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("bash", ["bash", "-c", "exec -a %[1]s-double sleep 600"])
    os._exit(0)
'
`, marker)
}

// daemonWatch finds the host PIDs of processes named after a marker while
// dsh runs, tells the command it saw them (the ready file), and checks
// afterwards, by those PIDs, that none survived.
type daemonWatch struct {
	marker, ready string
	pids          []int
}

func (w *daemonWatch) watch(n int, stop <-chan struct{}) {
	for {
		if w.pids = pidsNamed(w.marker); len(w.pids) >= n {
			_ = os.WriteFile(w.ready, nil, 0o644)
			return
		}
		select {
		case <-stop:
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// outlived reports whether any watched process is still alive (and
// kills it, so the test leaves nothing behind).
func (w *daemonWatch) outlived() bool {
	deadline := time.Now().Add(5 * time.Second)
	left := false
	for _, pid := range w.pids {
		for processAlive(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if processAlive(pid) {
			left = true
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return left
}

// pidsNamed lists host PIDs whose command line starts with marker.
func pidsNamed(marker string) []int {
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

// processAlive reports whether pid is a live (non-zombie) process.
func processAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && len(b) > i+2 && b[i+2] != 'Z'
}

// TestSandboxSIGKILLOfDshTakesItsCommandsDown is issue 31's containment
// through the binary: dsh is SIGKILLed while its command runs `sleep 603`
// after starting a setsid daemon and a double-forked one; none of the
// three survives, checked by the PIDs they had. In workspace-write (a PID
// namespace) and in danger-full-access (the helper as subreaper).
func TestSandboxSIGKILLOfDshTakesItsCommandsDown(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"workspace-write", "danger-full-access"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			b := newSandboxBox(t)
			marker := fmt.Sprintf("dshkill%d", time.Now().UnixNano()%1e9)
			w := &daemonWatch{marker: marker, ready: filepath.Join(b.ws, "seen")}
			cmd := daemonScript(marker) + "exec -a " + marker + "-fg sleep 603; echo done"
			r := b.run(t, mode, []string{cmd}, nil, func(pid int, exited <-chan struct{}) {
				w.watch(3, exited)
				if len(w.pids) >= 3 {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			if len(w.pids) < 3 {
				t.Fatalf("the command's processes were never seen (%v); dsh exited %d\n%s", w.pids, r.code, r.stderr)
			}
			if r.code != -1 {
				t.Fatalf("dsh was not killed: exit %d\n%s", r.code, r.stderr)
			}
			if w.outlived() {
				t.Fatalf("a process of the command outlived the SIGKILLed dsh (pids %v)", w.pids)
			}
		})
	}
}

// TestSandboxOrdinaryWorkThroughTheBinary: what an agent does all day runs
// sandboxed in default permission mode without asking (headless: a
// question would be a refusal) — go build and go test of a module, npm ci
// through the proxy from a registry on an allowed domain (served on
// loopback here), git commit, make, a python3 script — and the caches the
// builds use are private: the user's Go build cache is read, never
// written.
func TestSandboxOrdinaryWorkThroughTheBinary(t *testing.T) {
	t.Parallel()
	b := newSandboxBox(t)
	reg := newTinyRegistry(t)
	b.settings(t, map[string]any{
		"sandbox": map[string]any{"network": map[string]any{"allow": []string{"registry.test", "127.0.0.1"}}},
	})
	for name, content := range map[string]string{
		"gomod/go.mod":          "module m\n\ngo 1.22\n",
		"gomod/main.go":         "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"built-by-go\") }\n",
		"gomod/main_test.go":    "package main\n\nimport \"testing\"\n\nfunc TestOK(t *testing.T) {}\n",
		"web/package.json":      `{"name": "web", "version": "1.0.0", "private": true, "dependencies": {"tinypkg": "1.0.0"}}` + "\n",
		"web/package-lock.json": reg.lockfile("web", "http://registry.test:"+strconv.Itoa(reg.port)),
		"Makefile":              "all:\n\t@echo made-by-make > made.txt\n",
		"tool.py":               "import sys\nprint('python-says', sum(range(10)))\n",
	} {
		p := filepath.Join(b.ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goEnv := func(name string) string {
		out, err := exec.Command("go", "env", name).Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	userCache := goEnv("GOCACHE")
	poison := filepath.Join(userCache, fmt.Sprintf("dsh-poison-%d", time.Now().UnixNano()))
	t.Cleanup(func() { _ = os.Remove(poison) })
	steps := []struct{ cmd, want string }{
		// First: go build stamps the commit it builds from.
		{`git add Makefile && git -c user.name=t -c user.email=t@t commit -q -m first && git log --oneline | wc -l`, "1"},
		{`cd gomod && go build -o app . && ./app && go test -count=1 ./...`, "built-by-go"},
		{`cd gomod && go vet ./... && echo vetted`, "vetted"},
		{`echo poison > "$GOCACHE/` + filepath.Base(poison) + `" && echo wrote-private-cache`, "wrote-private-cache"},
		{`cd web && npm ci --no-audit --no-fund --no-update-notifier --registry "http://registry.test:` + strconv.Itoa(reg.port) + `/" && node -e 'console.log(require("tinypkg"))'`, "tinypkg-loaded"},
		{`make && cat made.txt`, "made-by-make"},
		{`python3 tool.py`, "python-says 45"},
	}
	var cmds []string
	for _, s := range steps {
		cmds = append(cmds, s.cmd)
	}
	r := b.runWith(t, runOptions{mode: "workspace-write", commands: cmds, forceAllow: false,
		env: []string{"GOCACHE=" + userCache, "GOMODCACHE=" + goEnv("GOMODCACHE"), "GOFLAGS=", "GOTOOLCHAIN=local"}})
	r.complete(t, len(cmds))
	for i, s := range steps {
		if res := r.results[i]; strings.HasPrefix(res, "Error") || !strings.Contains(res, s.want) {
			t.Errorf("%s: want %q; the model read:\n%s", s.cmd, s.want, res)
		}
	}
	if _, err := os.Stat(poison); err == nil {
		t.Errorf("a sandboxed command wrote the user's Go build cache")
	}
	if _, err := os.Stat(filepath.Join(b.home, ".npm")); err == nil {
		t.Errorf("npm wrote the home directory's cache")
	}
	if reg.tarballs.Load() == 0 {
		t.Errorf("the registry never served the tarball")
	}
}

// tinyRegistry serves one npm package on loopback: its metadata and its
// tarball, as registry.npmjs.org does.
type tinyRegistry struct {
	port      int
	tarball   []byte
	integrity string
	tarballs  atomic.Int64
}

func newTinyRegistry(t *testing.T) *tinyRegistry {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range map[string]string{
		"package/package.json": `{"name": "tinypkg", "version": "1.0.0", "main": "index.js"}` + "\n",
		"package/index.js":     "module.exports = 'tinypkg-loaded';\n",
	} {
		_ = tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), ModTime: time.Unix(1700000000, 0)})
		_, _ = tw.Write([]byte(body))
	}
	_ = tw.Close()
	_ = gz.Close()
	sum := sha512.Sum512(buf.Bytes())
	reg := &tinyRegistry{tarball: buf.Bytes(), integrity: "sha512-" + base64.StdEncoding.EncodeToString(sum[:])}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/tinypkg/-/tinypkg-1.0.0.tgz":
			reg.tarballs.Add(1)
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = w.Write(reg.tarball)
		case "/tinypkg":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"name":"tinypkg","dist-tags":{"latest":"1.0.0"},"versions":{"1.0.0":{"name":"tinypkg","version":"1.0.0","dist":{"tarball":"http://%s/tinypkg/-/tinypkg-1.0.0.tgz","integrity":%q}}}}`, r.Host, reg.integrity)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	reg.port = srv.Listener.Addr().(*net.TCPAddr).Port
	return reg
}

// lockfile is a package-lock.json (version 3) for a project that depends
// on tinypkg, resolved at base.
func (reg *tinyRegistry) lockfile(name, base string) string {
	lock := map[string]any{
		"name": name, "version": "1.0.0", "lockfileVersion": 3, "requires": true,
		"packages": map[string]any{
			"":                     map[string]any{"name": name, "version": "1.0.0", "dependencies": map[string]string{"tinypkg": "1.0.0"}},
			"node_modules/tinypkg": map[string]any{"version": "1.0.0", "resolved": base + "/tinypkg/-/tinypkg-1.0.0.tgz", "integrity": reg.integrity},
		},
	}
	b, _ := json.MarshalIndent(lock, "", "  ")
	return string(b) + "\n"
}

// With sandbox.hooks set, command hooks run in the session's sandbox, as
// its bash calls do: a PreToolUse hook's write in the workspace lands, its
// write outside and its read of ~/.ssh are refused by the kernel; without
// the setting the same hook does all three.
func TestSandboxedHooksThroughTheBinary(t *testing.T) {
	hook := `echo in > hook-in.txt; echo out > "$OUTSIDE/hook-out.txt"; cat "$HOME/.ssh/id_rsa" > hook-key.txt`
	for _, sandboxed := range []bool{true, false} {
		t.Run(fmt.Sprintf("sandbox.hooks=%v", sandboxed), func(t *testing.T) {
			t.Parallel()
			b := newSandboxBox(t)
			b.settings(t, map[string]any{
				"sandbox": map[string]any{"hooks": sandboxed},
				"hooks": map[string]any{"PreToolUse": []any{map[string]any{"matcher": "", "hooks": []any{
					map[string]any{"type": "command", "command": hook}}}}},
			})
			r := b.runWith(t, runOptions{mode: "workspace-write", commands: []string{"echo ran"}, forceAllow: true})
			r.complete(t, 1)
			if got, _ := os.ReadFile(filepath.Join(b.ws, "hook-in.txt")); string(got) != "in\n" {
				t.Fatalf("the hook's write in the workspace: %q; stderr:\n%s", got, r.stderr)
			}
			_, err := os.Stat(filepath.Join(b.outside, "hook-out.txt"))
			key, _ := os.ReadFile(filepath.Join(b.ws, "hook-key.txt"))
			leaked := strings.Contains(string(key), escapeSecret)
			if sandboxed && (err == nil || leaked) {
				t.Fatalf("the sandboxed hook wrote outside the workspace (%v) or read ~/.ssh (%v)", err == nil, leaked)
			}
			if !sandboxed && (err != nil || !leaked) {
				t.Fatalf("the unsandboxed hook could not write outside (%v) or read ~/.ssh (read %q), so the refusal proves nothing", err, key)
			}
		})
	}
}
