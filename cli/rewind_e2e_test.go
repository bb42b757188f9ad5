package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

type fileState struct {
	data string
	mode fs.FileMode
	gone bool
}

func stateOf(t *testing.T, path string) fileState {
	t.Helper()
	fi, err := os.Lstat(path)
	if os.IsNotExist(err) {
		return fileState{gone: true}
	}
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fileState{data: string(b), mode: fi.Mode().Perm()}
}

func writeMode(t *testing.T, path, data string, mode fs.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// sessionOf is the id of the only session in home.
func sessionOf(t *testing.T, dir, home, url string) string {
	t.Helper()
	r := dsh(t, dir, home, url, "", "sessions", "--json")
	var list []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 1 {
		t.Fatalf("sessions: %v %+v", err, r)
	}
	return list[0]["header"].(map[string]any)["id"].(string)
}

// The end-to-end, in a git repository and in a plain directory: a
// turn edits a file, writes a new one, runs sed -i on a third and rm on a
// fourth (and touches an ignored and an oversize file); a dry run shows the
// diff; a code rewind restores all four exactly; a conversation rewind
// makes the next request carry only the history before that turn; a file
// the user changed afterwards is a conflict, refused and left alone.
func TestRewindEndToEnd(t *testing.T) {
	for _, repo := range []bool{true, false} {
		name := "plain"
		if repo {
			name = "git"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir, home := t.TempDir(), t.TempDir()
			if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(`{"checkpoints":{"maxFileBytes":4096}}`), 0o600); err != nil {
				t.Fatal(err)
			}
			p := func(n string) string { return filepath.Join(dir, n) }
			writeMode(t, p("edit.txt"), "alpha\nbeta\n", 0o644)
			writeMode(t, p("sed.sh"), "#!/bin/sh\necho old\n", 0o755)
			writeMode(t, p("gone.txt"), "keep me\n", 0o600)
			writeMode(t, p(".gitignore"), "*.log\n", 0o644)
			writeMode(t, p("run.log"), "log 1\n", 0o644)
			writeMode(t, p("big.bin"), strings.Repeat("B", 5000), 0o644)
			if repo {
				for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init"}} {
					if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
						t.Fatalf("git %v: %v %s", args, err, out)
					}
				}
			}
			before := map[string]fileState{}
			for _, n := range []string{"edit.txt", "sed.sh", "gone.txt", "new.txt"} {
				before[n] = stateOf(t, p(n))
			}
			ds := &deepseek{replies: []string{textReply("Hello.")}}
			srv := httptest.NewServer(ds)
			defer srv.Close()
			model := []string{"-p", "--model", "deepseek/deepseek-chat", "--dangerously-skip-permissions"}
			if r := dsh(t, dir, home, srv.URL, "", append(model, "say hello")...); r.code != 0 {
				t.Fatalf("turn 1: %+v", r)
			}
			ds.setReplies(
				toolReply("c0", "read", map[string]string{"file_path": "edit.txt"}),
				toolReply("c1", "edit", map[string]string{"file_path": "edit.txt", "old_string": "beta", "new_string": "gamma"}),
				toolReply("c2", "write", map[string]string{"file_path": "new.txt", "content": "brand new\n"}),
				toolReply("c3", "bash", map[string]string{"command": "sed -i 's/old/new/' sed.sh && rm gone.txt && echo more >> run.log && printf C >> big.bin", "description": "shell changes"}),
				textReply("Done."),
			)
			if r := dsh(t, dir, home, srv.URL, "", append(append(model, "-c"), "change the files")...); r.code != 0 {
				t.Fatalf("turn 2: %+v", r)
			}
			if s := stateOf(t, p("sed.sh")); s.data != "#!/bin/sh\necho new\n" || stateOf(t, p("edit.txt")).data != "alpha\ngamma\n" || !stateOf(t, p("gone.txt")).gone || stateOf(t, p("new.txt")).gone {
				t.Fatalf("turn 2 did not change the files: sed.sh %+v", s)
			}
			id := sessionOf(t, dir, home, srv.URL)

			ls := dsh(t, dir, home, srv.URL, "", "rewind", id)
			if ls.code != 0 || !strings.Contains(ls.stdout, "change the files") || !strings.Contains(ls.stdout, "2 modified, 1 created, 1 deleted") {
				t.Fatalf("rewind list: %+v", ls)
			}
			dry := dsh(t, dir, home, srv.URL, "", "rewind", id, "--to", "2", "--dry-run")
			if dry.code != 0 || !strings.Contains(dry.stdout, "-gamma") || !strings.Contains(dry.stdout, "+beta") || !strings.Contains(dry.stdout, "+keep me") {
				t.Fatalf("dry run: %+v", dry)
			}
			if stateOf(t, p("gone.txt")).gone != true {
				t.Fatal("the dry run changed files")
			}

			rw := dsh(t, dir, home, srv.URL, "", "rewind", id, "--to", "2", "--code")
			if rw.code != 0 {
				t.Fatalf("rewind: %+v", rw)
			}
			for n, want := range before {
				if got := stateOf(t, p(n)); got != want {
					t.Errorf("%s after the rewind: %+v, want %+v", n, got, want)
				}
			}
			for _, n := range []string{"run.log", "big.bin"} {
				if !strings.Contains(rw.stdout, "not restored: "+p(n)) {
					t.Errorf("%s is not reported as not restored:\n%s", n, rw.stdout)
				}
			}
			if stateOf(t, p("run.log")).data != "log 1\nmore\n" {
				t.Error("the ignored file was restored")
			}

			// Conversation only: the next request carries turn 1, not turn 2.
			if r := dsh(t, dir, home, srv.URL, "", "rewind", id, "--to", "2", "--chat"); r.code != 0 || !strings.Contains(r.stdout, "hidden from the model") {
				t.Fatalf("chat rewind: %+v", r)
			}
			ds.setReplies(textReply("Fresh start."))
			if r := dsh(t, dir, home, srv.URL, "", append(append(model, "-c"), "what now?")...); r.code != 0 {
				t.Fatalf("turn after the rewind: %+v", r)
			}
			ds.mu.Lock()
			last, _ := json.Marshal(ds.requests[len(ds.requests)-1]["messages"])
			ds.mu.Unlock()
			if !strings.Contains(string(last), "say hello") || strings.Contains(string(last), "change the files") || strings.Contains(string(last), "gamma") || !strings.Contains(string(last), "what now?") {
				t.Fatalf("request after the conversation rewind: %s", last)
			}

			// A turn changes edit.txt again; the user then edits it too.
			ds.setReplies(
				toolReply("c3r", "read", map[string]string{"file_path": "edit.txt"}),
				toolReply("c4", "write", map[string]string{"file_path": "edit.txt", "content": "agent\n"}),
				toolReply("c5", "write", map[string]string{"file_path": "other.txt", "content": "x\n"}),
				textReply("Rewrote it."),
			)
			if r := dsh(t, dir, home, srv.URL, "", append(append(model, "-c"), "rewrite edit.txt")...); r.code != 0 {
				t.Fatalf("turn 4: %+v", r)
			}
			writeMode(t, p("edit.txt"), "user's own\n", 0o644)
			pts := dsh(t, dir, home, srv.URL, "", "rewind", id)
			turn := ""
			for _, l := range strings.Split(pts.stdout, "\n") {
				if strings.Contains(l, "rewrite edit.txt") {
					turn = strings.Fields(l)[0]
				}
			}
			cf := dsh(t, dir, home, srv.URL, "", "rewind", id, "--to", turn, "--code")
			if cf.code == 0 || !strings.Contains(cf.stdout, "conflict: "+p("edit.txt")) || !strings.Contains(cf.stdout, "+user's own") || !strings.Contains(cf.stderr, "--force") {
				t.Fatalf("conflicting rewind: %+v", cf)
			}
			if stateOf(t, p("edit.txt")).data != "user's own\n" || stateOf(t, p("other.txt")).gone {
				t.Fatal("a refused rewind changed files")
			}
			sk := dsh(t, dir, home, srv.URL, "", "rewind", id, "--to", turn, "--code", "--skip-conflicts")
			if sk.code != 0 || stateOf(t, p("edit.txt")).data != "user's own\n" || !stateOf(t, p("other.txt")).gone {
				t.Fatalf("rewind skipping conflicts: %+v", sk)
			}
			// The log says which rewinds were applied.
			exp := dsh(t, dir, home, srv.URL, "", "sessions", "export", id)
			if n := strings.Count(exp.stdout, `"type":"checkpoint/restored"`); n != 2 || strings.Count(exp.stdout, `"type":"checkpoint/restore-start"`) != 2 {
				t.Fatalf("%d restored events in the log", n)
			}
		})
	}
}

// SIGKILL in the middle of a rewind leaves every file either as it was
// before the rewind or as the rewind restores it, and the next rewind
// reports the interrupted one and finishes the job.
func TestRewindKilled(t *testing.T) {
	t.Parallel()
	dir, home := t.TempDir(), t.TempDir()
	const n = 1500
	for i := range n {
		writeMode(t, filepath.Join(dir, fmt.Sprintf("f%04d.txt", i)), fmt.Sprintf("old %d\n", i), 0o644)
	}
	ds := &deepseek{replies: []string{
		toolReply("c1", "bash", map[string]string{"command": "for f in f*.txt; do echo new > $f; done", "description": "rewrite all"}),
		textReply("Rewrote them."),
	}}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	if r := dsh(t, dir, home, srv.URL, "", "-p", "--model", "deepseek/deepseek-chat", "--dangerously-skip-permissions", "rewrite every file"); r.code != 0 {
		t.Fatalf("turn: %+v", r)
	}
	id := sessionOf(t, dir, home, srv.URL)
	cmd := exec.Command(dshBin, "rewind", id, "--to", "1", "--code")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DSH_HOME="+home, "DEEPSEEK_API_KEY=test-key", "DEEPSEEK_BASE_URL="+srv.URL)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it as soon as some files are back (the rewind is under way).
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(dir, "f0000.txt"))
		c, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("f%04d.txt", n-1)))
		if string(b) == "old 0\n" || string(c) == fmt.Sprintf("old %d\n", n-1) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Microsecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	restored := 0
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "f") {
			continue
		}
		var i int
		fmt.Sscanf(e.Name(), "f%04d.txt", &i)
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		switch string(b) {
		case fmt.Sprintf("old %d\n", i):
			restored++
		case "new\n":
		default:
			t.Fatalf("%s holds %q: neither before nor after", e.Name(), b)
		}
	}
	if restored == n {
		t.Logf("the rewind finished before the kill (%s)", out.String())
	}
	again := dsh(t, dir, home, srv.URL, "", "rewind", id, "--to", "1", "--code")
	if again.code != 0 {
		t.Fatalf("second rewind: %+v", again)
	}
	if restored < n && !strings.Contains(again.stdout, "was interrupted") {
		t.Errorf("the interrupted rewind is not reported:\n%s", again.stdout)
	}
	ents, _ = os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".dsh-rw-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
		if !strings.HasPrefix(e.Name(), "f") {
			continue
		}
		var i int
		fmt.Sscanf(e.Name(), "f%04d.txt", &i)
		if b, _ := os.ReadFile(filepath.Join(dir, e.Name())); string(b) != fmt.Sprintf("old %d\n", i) {
			t.Fatalf("%s = %q after the second rewind", e.Name(), b)
		}
	}
}
