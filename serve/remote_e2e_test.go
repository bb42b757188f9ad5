package serve_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dshq/dsh/internal/dshtest"
	"github.com/dshq/dsh/internal/fakeanthropic"
)

// remoteReply is reply, plus "fail" (the provider answers 400) and "slow"
// (the answer waits until the test lets it go).
func remoteReply(release <-chan struct{}) func(fakeanthropic.Request) fakeanthropic.Reply {
	return func(req fakeanthropic.Request) fakeanthropic.Reply {
		switch text := req.LastUserText(); {
		case strings.Contains(text, "fail"):
			return fakeanthropic.Reply{Status: 400, ErrorType: "invalid_request_error", ErrorMsg: "the scripted model refuses"}
		case strings.Contains(text, "slow"):
			<-release
		}
		return reply(req)
	}
}

// dshRun runs dsh in dir with the environment plus extra and returns its
// outcome.
func dshRun(t *testing.T, e *dshtest.Env, dir string, extra []string, args ...string) dshtest.Result {
	t.Helper()
	cmd := exec.Command(dshtest.Bin, args...)
	cmd.Dir = dir
	cmd.Env = e.Environ(extra...)
	cmd.Stdin = strings.NewReader("")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return dshtest.Result{Stdout: out.String(), Stderr: errb.String(), Code: code}
}

// shape is a stream-json or json output with what differs between two runs
// of the same turn removed (ids, times, paths).
func shape(t *testing.T, out string) []string {
	t.Helper()
	var s []string
	for _, l := range dshtest.Lines(t, out) {
		line := fmt.Sprint(l["type"], "/", l["subtype"])
		if m, ok := l["message"].(map[string]any); ok {
			if content, ok := m["content"].([]any); ok {
				for _, b := range content {
					if b, ok := b.(map[string]any); ok {
						line += fmt.Sprint(" ", b["type"], ":", b["text"], b["name"], b["is_error"])
					}
				}
			}
		}
		if l["type"] == "result" {
			line += fmt.Sprint(" ", l["is_error"], " ", l["result"], " ", l["num_turns"], " ", l["stop_reason"], " ", l["terminal_reason"],
				" ", len(l["permission_denials"].([]any)), " ", l["usage"].(map[string]any)["output_tokens"])
		}
		s = append(s, line)
	}
	return s
}

// TestRemotePrompt: dsh remote -p, a real process against a real dsh
// serve, prints what dsh -p prints for the same turn, in each format, with
// dsh -p's exit codes; questions are denied, allowed or left waiting per
// --approve; the token never shows; an interrupt cancels the turn on the
// server.
func TestRemotePrompt(t *testing.T) {
	release := make(chan struct{})
	e := dshtest.New(t, "..", remoteReply(release))
	t.Cleanup(func() { close(release) }) // before the fake model closes
	root := e.Dir
	admin := token(t, e, "admin")
	p := startServe(t, e, nil, "--root", root)
	env := []string{"DSH_SERVE_TOKEN=" + admin}
	remote := func(args ...string) dshtest.Result {
		t.Helper()
		r := dshRun(t, e, t.TempDir(), env, append([]string{"remote", "--server", p.URL}, args...)...)
		if strings.Contains(r.Stdout+r.Stderr, admin) {
			t.Fatalf("dsh remote printed its token:\n%s\n%s", r.Stdout, r.Stderr)
		}
		return r
	}
	local := func(args ...string) dshtest.Result {
		t.Helper()
		return dshRun(t, e, root, nil, args...)
	}

	// text: the answer, exit 0.
	r := remote("-p", "say hello")
	want := local("-p", "say hello")
	if r.Code != 0 || want.Code != 0 || r.Stdout != want.Stdout || !strings.Contains(r.Stdout, "hello from the scripted model, answering say hello") {
		t.Fatalf("text: remote %d %q %s, local %d %q", r.Code, r.Stdout, r.Stderr, want.Code, want.Stdout)
	}

	// json and stream-json: the same lines as dsh -p's, but for ids and
	// times. A write asked for is denied by default, as dsh -p denies it.
	for _, format := range []string{"json", "stream-json"} {
		target := filepath.Join(root, "denied-"+format+".txt")
		prompt := "please write " + target
		r := remote("-p", prompt, "--output-format", format)
		want := local("-p", prompt, "--output-format", format)
		if r.Code != want.Code || r.Code != 0 {
			t.Fatalf("%s: remote exit %d (%s), local %d (%s)", format, r.Code, r.Stderr, want.Code, want.Stderr)
		}
		got, exp := shape(t, r.Stdout), shape(t, want.Stdout)
		t.Logf("%s: %q", format, got)
		if !slices.Equal(got, exp) {
			t.Fatalf("%s differs from dsh -p's:\nremote %q\nlocal  %q", format, got, exp)
		}
		if _, err := os.Stat(target); err == nil {
			t.Fatalf("%s: the denied write happened", format)
		}
		if !strings.Contains(r.Stderr, "denied write") {
			t.Fatalf("%s: stderr does not say the question was denied: %s", format, r.Stderr)
		}
		if format == "json" {
			var res map[string]any
			if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil || res["session_id"] == "" || len(res["permission_denials"].([]any)) != 1 {
				t.Fatalf("json result: %v %s", err, r.Stdout)
			}
		}
	}

	// --approve allow: the write happens.
	target := filepath.Join(root, "allowed.txt")
	r = remote("-p", "please write "+target, "--approve", "allow")
	if b, err := os.ReadFile(target); r.Code != 0 || err != nil || string(b) != "written through the API" || !strings.Contains(r.Stderr, "allowed write") {
		t.Fatalf("allow: %d %v %q %s", r.Code, err, b, r.Stderr)
	}

	// A failed model call: dsh -p's code and message.
	r = remote("-p", "please fail")
	want = local("-p", "please fail")
	if r.Code != want.Code || r.Code != 1 || !strings.Contains(r.Stderr, "the scripted model refuses") {
		t.Fatalf("failure: remote %d %s, local %d %s", r.Code, r.Stderr, want.Code, want.Stderr)
	}

	// Refusals: a bad token, a workspace outside the roots, a bad flag.
	bad := dshRun(t, e, t.TempDir(), []string{"DSH_SERVE_TOKEN=dsh_00000000_" + strings.Repeat("0", 64)}, "remote", "--server", p.URL, "-p", "hi")
	if bad.Code != 2 || !strings.Contains(bad.Stderr, "401") {
		t.Fatalf("bad token: %d %s", bad.Code, bad.Stderr)
	}
	if r := remote("-p", "hi", "--workspace", t.TempDir()); r.Code != 2 || !strings.Contains(r.Stderr, "403") {
		t.Fatalf("outside the roots: %d %s", r.Code, r.Stderr)
	}
	if r := remote("-p", "hi", "--approve", "maybe"); r.Code != 2 {
		t.Fatalf("bad --approve: %d %s", r.Code, r.Stderr)
	}
	if r := dshRun(t, e, t.TempDir(), nil, "remote", "--server", p.URL, "-p", "hi"); r.Code != 2 || !strings.Contains(r.Stderr, "DSH_SERVE_TOKEN") {
		t.Fatalf("no token: %d %s", r.Code, r.Stderr)
	}

	// dsh remote sessions lists them; --session continues one.
	ls := remote("sessions")
	if ls.Code != 0 || strings.Count(ls.Stdout, root) < 5 || !strings.HasPrefix(ls.Stdout, "ID") {
		t.Fatalf("sessions: %d %s %s", ls.Code, ls.Stdout, ls.Stderr)
	}
	js := remote("-p", "say again", "--output-format", "json")
	var first map[string]any
	if err := json.Unmarshal([]byte(js.Stdout), &first); err != nil {
		t.Fatal(err)
	}
	id := first["session_id"].(string)
	again := remote("-p", "and once more", "--session", id, "--output-format", "json")
	var second map[string]any
	if err := json.Unmarshal([]byte(again.Stdout), &second); err != nil || second["session_id"] != id || !strings.Contains(second["result"].(string), "once more") {
		t.Fatalf("--session: %v %s %s", err, again.Stdout, again.Stderr)
	}

	// SIGINT while the model is slow: the turn is cancelled on the server
	// and the run exits 3, as dsh -p does.
	cmd := exec.Command(dshtest.Bin, "remote", "--server", p.URL, "-p", "be slow", "--output-format", "json")
	cmd.Dir = t.TempDir()
	cmd.Env = e.Environ(env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(remote("sessions", "--status", "running").Stdout, "running") {
		if time.Now().After(deadline) {
			t.Fatal("the slow turn never ran")
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	ee, _ := err.(*exec.ExitError)
	var res map[string]any
	if ee == nil || ee.ExitCode() != 3 || json.Unmarshal(out.Bytes(), &res) != nil || res["subtype"] != "error_during_execution" {
		t.Fatalf("interrupted: %v %s %s", err, out.String(), errb.String())
	}
}
