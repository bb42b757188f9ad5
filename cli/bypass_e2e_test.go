//go:build linux

package cli_test

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// The eleven classes of shell-analysis bypass of issue 19, end to end: the
// real binary, headless, a scripted model asking for the attacks of one
// class and for ordinary commands of the same programs. Each attack must
// leave its marker file absent (or its secret out of every request), and
// its refusal must reach the model; each ordinary command must run without
// asking where the rules allow it (headless, a question is a refusal).

// step is one tool call of the script and what its result must show.
type step struct {
	tool    string
	args    map[string]string
	refused bool   // the result is a refusal the model reads
	shows   string // the call ran: its result holds this
}

func bashStep(command string, refused bool, shows string) step {
	return step{tool: "bash", args: map[string]string{"command": command, "description": "step"}, refused: refused, shows: shows}
}

type bypassCase struct {
	name        string
	mode        string
	allow, deny []string
	setup       func(t *testing.T, dir, outside string)
	steps       func(dir, outside, marker string) []step
	// secret must reach no request; absent lists files that must not
	// exist afterwards, present files that must.
	secret          string
	absent, present func(dir, outside string) []string
	key             string // the API key dsh is given (default test-key)
	// sandbox is the --sandbox mode; "" is danger-full-access, so what is
	// tested is the permission layer's own decisions.
	sandbox string
	during  func(dir string) func() // runs while dsh does; returns its stop
}

func TestBypassClassesEndToEnd(t *testing.T) {
	t.Parallel()
	secret := "s3cret-" + randomHex(t)
	writeTree := func(t *testing.T, root string, files map[string]string) {
		t.Helper()
		for name, content := range files {
			p := filepath.Join(root, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	gitInit := func(t *testing.T, dir string) {
		t.Helper()
		for _, args := range [][]string{{"init", "-q"}, {"-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "init"}} {
			cmd := exec.Command("git", args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
	}
	markerOnly := func(_, outside string) []string { return []string{filepath.Join(outside, "P")} }
	cases := []bypassCase{{
		name: "1-prompt-expansion", mode: "default",
		steps: func(dir, outside, p string) []step {
			x := `X='$(touch ` + p + `)'; `
			return []step{
				bashStep(x+`echo "${X@P}"`, true, ""),
				bashStep(`set -- '$(touch `+p+`)'; echo "${1@P}"`, true, ""),
				bashStep(x+`read -r y <<< "${X@P}"`, true, ""),
				bashStep(x+`echo "${Y:-${X@P}}"`, true, ""),
				bashStep(`x='a[$(touch `+p+`)]'; echo $((x))`, true, ""),
				bashStep(`X=quoted; echo "${X@Q} ${X@U}"`, false, "'quoted' QUOTED"),
			}
		},
		absent: markerOnly,
	}, {
		name: "2-redirection-reads", mode: "default",
		setup: func(t *testing.T, dir, outside string) {
			writeTree(t, outside, map[string]string{"secret": secret + "\n"})
			writeTree(t, dir, map[string]string{"inside.txt": "inside-content\n"})
		},
		steps: func(dir, outside, _ string) []step {
			s := filepath.Join(outside, "secret")
			return []step{
				bashStep(`echo "$(< `+s+`)"`, true, ""),
				bashStep(`read -r l < `+s+`; echo "$l"`, true, ""),
				bashStep(`mapfile -t a < `+s+`; echo "${a[0]}"`, true, ""),
				bashStep(`read -r l < /proc/$PPID/environ; echo "$l"`, true, ""),
				bashStep(`exec 3<>/dev/tcp/127.0.0.1/9; echo connected`, true, ""),
				bashStep(`echo "$(< inside.txt)"`, false, "inside-content"),
				bashStep(`read -r l < inside.txt; echo "got $l"`, false, "got inside-content"),
			}
		},
		secret: secret,
	}, {
		name: "3-directory-change", mode: "bypassPermissions", deny: []string{"Read(./secrets/**)", "Edit(./protected/**)"},
		setup: func(t *testing.T, dir, _ string) {
			writeTree(t, dir, map[string]string{"secrets/key.txt": secret + "\n", "protected/keep": "", "src/main.go": "package main\n"})
		},
		steps: func(dir, _, _ string) []step {
			return []step{
				bashStep(`cd secrets && read -r l < key.txt; echo "$l"`, true, ""),
				bashStep(`(cd secrets; cat key.txt)`, true, ""),
				bashStep(`pushd secrets >/dev/null && echo "$(< key.txt)"`, true, ""),
				bashStep(`cd protected && echo x > f`, true, ""),
				bashStep(`cd "$(echo protected)" && echo x > f`, true, ""),
				bashStep(`cd src && cat main.go`, false, "package main"),
				bashStep(`cd src && echo ok > out.txt && cat out.txt`, false, "ok"),
			}
		},
		secret: secret,
		absent: func(dir, _ string) []string { return []string{filepath.Join(dir, "protected", "f")} },
	}, {
		name: "4-quoted-brace-expansion", mode: "bypassPermissions", deny: []string{"Bash(touch:*)"},
		steps: func(dir, outside, p string) []step {
			return []step{
				bashStep(`{"touch",`+p+`}`, true, ""),
				bashStep(`{'touch',`+p+`}`, true, ""),
				bashStep(`{"to"uch,`+p+`}`, true, ""),
				bashStep(`echo {"a",b}`, false, "a b"),
			}
		},
		absent: markerOnly,
	}, {
		name: "5-wrappers", mode: "bypassPermissions", deny: []string{"Bash(touch:*)"},
		steps: func(dir, outside, p string) []step {
			l := filepath.Join(outside, "lock")
			return []step{
				bashStep(`flock `+l+` touch `+p, true, ""),
				bashStep(`flock `+l+` -c 'touch `+p+`'`, true, ""),
				bashStep(`timeout 5 nice -n 1 touch `+p, true, ""),
				bashStep(`setpriv --no-new-privs touch `+p, true, ""),
				bashStep(`script -qc 'touch `+p+`' /dev/null`, true, ""),
				bashStep(`watch -n 1 -x touch `+p, true, ""),
				bashStep(`find . -maxdepth 0 -exec touch `+p+` \;`, true, ""),
				bashStep(`ssh -o ProxyCommand='touch `+p+`' example.invalid`, true, ""),
				bashStep(`mywrapper touch `+p, true, ""),
				bashStep(`timeout 5 nice -n 1 echo wrapped-ok`, false, "wrapped-ok"),
				bashStep(`flock `+l+` echo locked-ok`, false, "locked-ok"),
			}
		},
		absent: markerOnly,
	}, {
		name: "5-wrappers-allowed", mode: "default", allow: []string{"Bash(echo:*)", "Bash(ls:*)"}, deny: []string{"Bash(touch:*)"},
		steps: func(dir, outside, p string) []step {
			return []step{
				bashStep(`timeout 5 touch `+p, true, ""),
				bashStep(`timeout 5 ls -d .`, false, "."),
				bashStep(`nice -n 5 ls -d .`, false, "."),
				bashStep(`stdbuf -oL echo buffered-ok`, false, "buffered-ok"),
			}
		},
		absent: markerOnly,
	}, {
		name: "6-plan-read-only", mode: "plan", allow: []string{"Bash(uniq:*)", "Bash(xxd:*)", "Bash(sort:*)", "Bash(git:*)"},
		setup: func(t *testing.T, dir, _ string) {
			writeTree(t, dir, map[string]string{"in.txt": "b\na\na\n"})
			gitInit(t, dir)
		},
		steps: func(dir, outside, p string) []step {
			return []step{
				bashStep(`uniq in.txt `+p, true, ""),
				bashStep(`xxd in.txt `+p, true, ""),
				bashStep(`sort -o `+p+` in.txt`, true, ""),
				bashStep(`git remote -v add evil `+outside, true, ""),
				bashStep(`uniq -c in.txt`, false, "2 a"),
				bashStep(`xxd in.txt`, false, "620a 610a"),
				bashStep(`git remote -v; echo remotes-listed`, false, "remotes-listed"),
			}
		},
		absent: markerOnly,
	}, {
		name: "7-prefix-rule-boundary", mode: "default", allow: []string{"Bash(git diff:*)", "Bash(sort:*)"},
		setup: func(t *testing.T, dir, outside string) {
			writeTree(t, dir, map[string]string{"in.txt": "b\na\n"})
			writeTree(t, outside, map[string]string{"secret": secret + "\n"})
			gitInit(t, dir)
		},
		steps: func(dir, outside, p string) []step {
			return []step{
				bashStep(`git diff --output=`+p, true, ""),
				bashStep(`git diff --no-index `+filepath.Join(outside, "secret")+` /dev/null`, true, ""),
				bashStep(`sort -o `+p+` in.txt`, true, ""),
				bashStep(`X=--output=`+p+`; git diff "$X"`, true, ""),
				{tool: "bash", args: map[string]string{"command": "git diff --stat", "workdir": outside}, refused: true},
				bashStep(`git diff --stat; echo diffed`, false, "diffed"),
				bashStep(`sort in.txt`, false, "a\nb"),
			}
		},
		secret: secret,
		absent: markerOnly,
	}, {
		name: "8-repository-config", mode: "acceptEdits", allow: []string{"Bash(git status:*)"},
		setup: func(t *testing.T, dir, _ string) { gitInit(t, dir) },
		steps: func(dir, outside, p string) []step {
			return []step{
				bashStep(`printf '[core]\n\tfsmonitor = "touch `+p+`"\n' >> .git/config`, true, ""),
				{tool: "edit", args: map[string]string{"file_path": ".git/config", "old_string": "[core]", "new_string": "[core]\n\tfsmonitor = \"touch " + p + "\""}, refused: true},
				{tool: "write", args: map[string]string{"file_path": ".git/hooks/post-checkout", "content": "#!/bin/sh\ntouch " + p + "\n"}, refused: true},
				bashStep(`echo 'touch `+p+`' >> .envrc`, true, ""),
				bashStep(`git status --short; echo status-ran`, false, "status-ran"),
				bashStep(`echo notes > notes.txt; echo wrote-notes`, false, "wrote-notes"),
				{tool: "write", args: map[string]string{"file_path": "src/new.go", "content": "package src\n"}, shows: "Created file"},
			}
		},
		absent: func(dir, outside string) []string {
			return []string{filepath.Join(outside, "P"), filepath.Join(dir, ".git", "hooks", "post-checkout"), filepath.Join(dir, ".envrc")}
		},
		present: func(dir, _ string) []string {
			return []string{filepath.Join(dir, "notes.txt"), filepath.Join(dir, "src", "new.go")}
		},
	}, {
		// A sandbox answers the questions asked for lack of certainty, not
		// those about files that run code later, outside it.
		// (acceptEdits, so the ordinary write runs whether or not this
		// machine can sandbox.)
		name: "8-repository-config-sandboxed", mode: "acceptEdits", sandbox: "workspace-write",
		setup: func(t *testing.T, dir, _ string) { gitInit(t, dir) },
		steps: func(dir, outside, p string) []step {
			return []step{
				bashStep(`echo 'touch `+p+`' >> .envrc`, true, ""),
				bashStep(`echo 'x' >> .npmrc`, true, ""),
				bashStep(`echo notes > notes.txt; echo wrote-notes`, false, "wrote-notes"),
			}
		},
		absent: func(dir, _ string) []string {
			return []string{filepath.Join(dir, ".envrc"), filepath.Join(dir, ".npmrc")}
		},
	}, {
		name: "9-api-key-environ", mode: "bypassPermissions", key: "key-" + secret,
		steps: func(dir, outside, _ string) []step {
			return []step{
				// dsh is the nearest ancestor running "dsh -p" (its sandbox
				// helper may stand between it and the shell).
				bashStep(`p=$PPID; while [ "$p" -gt 1 ]; do c=$(tr '\0' ' ' < /proc/$p/cmdline); case "$c" in *"dsh -p "*) break;; esac; p=$(cut -d' ' -f4 /proc/$p/stat); done; `+
					`echo "dsh=$c"; echo "bytes=$(tr -d '\0' < /proc/$p/environ | wc -c)"`, false, "bytes=0"),
				bashStep(`cat /proc/$PPID/environ /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' | grep '^DEEPSEEK_API_KEY=' | sort -u; echo scanned`, false, "scanned"),
				bashStep(`echo "own=${DEEPSEEK_API_KEY-absent}"`, false, "own=absent"),
			}
		},
		secret: secret,
	}, {
		name: "10-hard-links", mode: "default", allow: []string{"Bash(cat:*)", "Bash(grep:*)"}, deny: []string{"Read(./secrets/**)"},
		setup: func(t *testing.T, dir, _ string) {
			writeTree(t, dir, map[string]string{"secrets/key.txt": secret + "\n", "pub/other.txt": "hello public\n"})
			if err := os.Link(filepath.Join(dir, "secrets", "key.txt"), filepath.Join(dir, "pub", "k")); err != nil {
				t.Fatal(err)
			}
		},
		steps: func(dir, _, _ string) []step {
			return []step{
				{tool: "read", args: map[string]string{"file_path": "pub/k"}, refused: true},
				bashStep(`cat pub/k`, true, ""),
				bashStep(`read -r l < pub/k; echo "$l"`, true, ""),
				{tool: "grep", args: map[string]string{"pattern": "s3cret|hello", "path": "pub", "output_mode": "content"}, shows: "hello public"},
				{tool: "read", args: map[string]string{"file_path": "pub/other.txt"}, shows: "hello public"},
				bashStep(`cat pub/other.txt`, false, "hello public"),
			}
		},
		secret: secret,
	}, {
		name: "11-link-swap-race", mode: "acceptEdits", deny: []string{"Edit(./protected/**)"},
		setup: func(t *testing.T, dir, _ string) {
			for _, d := range []string{"ok", "protected"} {
				if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(filepath.Join(dir, "ok"), filepath.Join(dir, "link")); err != nil {
				t.Fatal(err)
			}
		},
		steps: func(dir, _, _ string) []step {
			var out []step
			for i := 0; i < 60; i++ {
				out = append(out, step{tool: "write", args: map[string]string{"file_path": "link/f", "content": fmt.Sprintf("write %d\n", i)}})
			}
			return out
		},
		during: func(dir string) func() {
			link := filepath.Join(dir, "link")
			var stop atomic.Bool
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; !stop.Load(); i++ {
					target := filepath.Join(dir, "ok")
					if i%2 == 1 {
						target = filepath.Join(dir, "protected")
					}
					tmp := fmt.Sprintf("%s.%d", link, i)
					if os.Symlink(target, tmp) == nil {
						_ = os.Rename(tmp, link)
					}
				}
			}()
			return func() { stop.Store(true); wg.Wait() }
		},
		absent:  func(dir, _ string) []string { return []string{filepath.Join(dir, "protected", "f")} },
		present: func(dir, _ string) []string { return []string{filepath.Join(dir, "ok", "f")} },
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			runBypassCase(t, tc)
		})
	}
}

func runBypassCase(t *testing.T, tc bypassCase) {
	dir, outside, home := t.TempDir(), t.TempDir(), t.TempDir()
	settings, _ := json.Marshal(map[string]any{"permissions": map[string]any{"allow": tc.allow, "deny": tc.deny}})
	if err := os.WriteFile(filepath.Join(home, "settings.json"), settings, 0o600); err != nil {
		t.Fatal(err)
	}
	if tc.setup != nil {
		tc.setup(t, dir, outside)
	}
	steps := tc.steps(dir, outside, filepath.Join(outside, "P"))
	ds := &deepseek{key: tc.key}
	for i, s := range steps {
		ds.replies = append(ds.replies, toolReply(fmt.Sprintf("call_%d", i), s.tool, s.args))
	}
	ds.replies = append(ds.replies, textReply("done"))
	srv := httptest.NewServer(ds)
	defer srv.Close()
	var stop func()
	if tc.during != nil {
		stop = tc.during(dir)
	}
	sandbox := tc.sandbox
	if sandbox == "" {
		sandbox = "danger-full-access"
	}
	cmd := exec.Command(dshBin, "-p", "--model", "deepseek/deepseek-chat", "--permission-mode", tc.mode, "--sandbox", sandbox, "--max-turns", "200", "go")
	cmd.Dir = dir
	key := tc.key
	if key == "" {
		key = "test-key"
	}
	cmd.Env = append(os.Environ(), "DSH_HOME="+home, "DEEPSEEK_API_KEY="+key, "DEEPSEEK_BASE_URL="+srv.URL,
		"ANTHROPIC_API_KEY=", "OPENAI_API_KEY=", "DSH_MODEL=")
	out, err := cmd.CombinedOutput()
	if stop != nil {
		stop()
	}
	if err != nil {
		t.Fatalf("dsh: %v\n%s", err, out)
	}
	ds.mu.Lock()
	reqs := ds.requests
	ds.mu.Unlock()
	if len(reqs) != len(steps)+1 {
		t.Fatalf("%d requests for %d steps\n%s", len(reqs), len(steps), out)
	}
	for i, s := range steps {
		res, ok := toolResult(reqs[i+1], fmt.Sprintf("call_%d", i))
		if !ok {
			t.Errorf("step %d (%v): no tool result reached the model", i, s.args)
			continue
		}
		refused := strings.HasPrefix(res, "Error")
		switch {
		case s.refused && !refused:
			t.Errorf("step %d %s %v: ran, want refused; the model read:\n%s", i, s.tool, s.args, res)
		case s.shows != "" && (refused || !strings.Contains(res, s.shows)):
			t.Errorf("step %d %s %v: want it to run and show %q; the model read:\n%s", i, s.tool, s.args, s.shows, res)
		}
	}
	if tc.secret != "" {
		for i, r := range reqs {
			if b, _ := json.Marshal(r); strings.Contains(string(b), tc.secret) {
				t.Errorf("request %d holds the secret", i)
			}
		}
	}
	if tc.absent != nil {
		for _, f := range tc.absent(dir, outside) {
			if _, err := os.Lstat(f); err == nil {
				t.Errorf("%s exists: an attack ran", f)
			}
		}
	}
	if tc.present != nil {
		for _, f := range tc.present(dir, outside) {
			if _, err := os.Stat(f); err != nil {
				t.Errorf("%s is missing: an ordinary call did not run (%v)", f, err)
			}
		}
	}
}

// toolResult is the text of the tool result for callID in a request.
func toolResult(req map[string]any, callID string) (string, bool) {
	msgs, _ := req["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		if mm["role"] == "tool" && mm["tool_call_id"] == callID {
			switch c := mm["content"].(type) {
			case string:
				return c, true
			default:
				b, _ := json.Marshal(c)
				return string(b), true
			}
		}
	}
	return "", false
}

func randomHex(t *testing.T) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
