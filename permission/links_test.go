//go:build unix

package permission

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	dshfs "github.com/dshq/dsh/fs"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/settings"
)

// Class 10: a hard link made inside the workspace to a file a Read (or
// Edit) rule denies is that file: every way of reading it through the link
// is refused, and so is changing it through one.
func TestHardLinksToDeniedContent(t *testing.T) {
	e, _ := classEnv(t)
	ctx := context.Background()
	for _, d := range []string{"pub", "protected"} {
		must(t, os.MkdirAll(filepath.Join(e.root, d), 0o755))
	}
	must(t, os.WriteFile(filepath.Join(e.home, ".ssh", "id_rsa"), []byte("KEY\n"), 0o600))
	must(t, os.WriteFile(filepath.Join(e.root, "protected", "f"), []byte("x\n"), 0o644))
	for link, target := range map[string]string{
		"pub/k":   filepath.Join(e.root, "secrets", "key.txt"),
		"pub/ssh": filepath.Join(e.home, ".ssh", "id_rsa"),
		"pub/p":   filepath.Join(e.root, "protected", "f"),
		"pub/own": filepath.Join(e.root, "src", "main.go"), // two names, neither denied
	} {
		must(t, os.Link(target, filepath.Join(e.root, link)))
	}
	c := mustNew(t, Config{Mode: ModeAcceptEdits, ModeSource: settings.LayerCLI, Home: e.home, Cwd: e.root, Rules: append(append(
		rules(Deny, "/p/.dsh/settings.json", "Read(./secrets/**)", "Read(~/.ssh/**)", "Edit(./protected/**)"),
		rules(Allow, userSettings, "Bash(cat:*)", "Bash(grep:*)", "Bash(head:*)", "Bash(cp:*)")...),
		rules(Ask, userSettings)...)})
	for _, tt := range []struct {
		tool string
		args map[string]string
		want Behavior
	}{
		{"read", map[string]string{"file_path": "pub/k"}, Deny},
		{"read", map[string]string{"file_path": e.root + "/pub/ssh"}, Deny},
		{"read", map[string]string{"file_path": "pub/own"}, Allow},
		{"write", map[string]string{"file_path": "pub/p", "content": "y"}, Deny},
		{"edit", map[string]string{"file_path": "pub/p", "old_string": "x", "new_string": "y"}, Deny},
		{"bash", map[string]string{"command": "cat pub/k"}, Deny},
		{"bash", map[string]string{"command": "head -n1 pub/ssh"}, Deny},
		{"bash", map[string]string{"command": "grep . pub/k"}, Deny},
		{"bash", map[string]string{"command": "read -r l < pub/k; echo $l"}, Deny},
		{"bash", map[string]string{"command": `echo "$(< pub/ssh)"`}, Deny},
		{"bash", map[string]string{"command": "cd pub && cat k"}, Deny},
		{"bash", map[string]string{"command": "cp pub/k out.txt"}, Deny},
		{"bash", map[string]string{"command": "cat pub/own"}, Allow},
	} {
		if d := c.Decide(ctx, call(tt.tool, tt.args), e.root); d.Behavior != tt.want {
			t.Errorf("%s %v: got %s, want %s (%s)", tt.tool, tt.args, d.Behavior, tt.want, d.Reason)
		}
	}
	// A search leaves the linked files out of its results.
	denied := c.ReadFilter("", e.root, "grep")
	for f, want := range map[string]bool{"pub/k": true, "pub/ssh": true, "pub/own": false, "src/main.go": false} {
		if got := denied(f); got != want {
			t.Errorf("grep result %s: denied %v, want %v", f, got, want)
		}
	}
	// The tools' confirmation refuses a file whose other name is denied,
	// whatever path led to it.
	for f, want := range map[string]bool{"pub/k": true, "pub/own": false} {
		key := filepath.Join(e.root, f)
		fi, err := os.Stat(key)
		must(t, err)
		in := call("read", map[string]string{"file_path": key})
		c.decided.note(in, Decision{Behavior: Allow, File: key}) // decided before the link appeared
		err = c.ConfirmFile(ctx, in, key, statID(fi))
		if (err != nil) != want {
			t.Errorf("confirm %s: %v", f, err)
		}
	}
}

// A file with several names whose other names cannot all be checked (the
// denied directory is too large to walk) is refused rather than guessed.
func TestHardLinkIdentityWalkIsBounded(t *testing.T) {
	e, _ := classEnv(t)
	must(t, os.Link(filepath.Join(e.root, "src", "main.go"), filepath.Join(e.root, "m")))
	d := &decider{c: mustNew(t, Config{Cwd: e.root, Home: e.home}), cwd: e.root, name: toolRead}
	d.rules[2] = []*rule{mustRule(t, "Read(./secrets/**)")}
	fi, err := os.Stat(filepath.Join(e.root, "m"))
	must(t, err)
	if why := d.identityDenied(toolRead, filepath.Join(e.root, "m"), statID(fi)); why != "" {
		t.Fatalf("a link to an allowed file: %s", why)
	}
	found, complete := findName(e.root, dshfs.FileID{Inode: 1, Device: 1}, func(string) bool { return true })
	if found != "" || !complete {
		t.Fatalf("walk of a small tree: %q, complete %v", found, complete)
	}
}

func mustRule(t *testing.T, text string) *rule {
	t.Helper()
	r, err := parseRule(Rule{Text: text, Behavior: Deny, Source: "test"}, "/home/u")
	must(t, err)
	return r
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Class 11: a symbolic link swapped between the decision and the tool's
// open. The tool confirms the file it resolved: one the decision was not
// about is decided again, and a denied one is refused — however the link
// moves, no confirmed write lands in the denied directory.
func TestConfirmFileAfterSwappedLink(t *testing.T) {
	e, _ := classEnv(t)
	ctx := context.Background()
	ok, denied := filepath.Join(e.root, "ok"), filepath.Join(e.root, "protected")
	must(t, os.MkdirAll(ok, 0o755))
	link := filepath.Join(e.root, "link")
	must(t, os.Symlink(ok, link))
	c := mustNew(t, Config{Mode: ModeAcceptEdits, ModeSource: settings.LayerCLI, Home: e.home, Cwd: e.root,
		Rules: rules(Deny, "/p/.dsh/settings.json", "Edit(./protected/**)")})
	// The swap between decision and open, made by hand.
	in := call("write", map[string]string{"file_path": "link/f", "content": "x"})
	d := c.Decide(ctx, in, e.root)
	c.decided.note(in, d)
	if d.Behavior != Allow || d.File != filepath.Join(ok, "f") {
		t.Fatalf("decision on link/f: %+v", d)
	}
	must(t, os.Remove(link))
	must(t, os.Symlink(denied, link))
	if err := c.ConfirmFile(ctx, in, resolve(filepath.Join(link, "f")), dshfs.FileID{}); err == nil {
		t.Fatal("a write decided for ok/f was confirmed into protected/f")
	}
	must(t, os.Remove(link))
	must(t, os.Symlink(ok, link))

	// And by a task swapping as fast as it can.
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			target := ok
			if i%2 == 1 {
				target = denied
			}
			tmp := fmt.Sprintf("%s.%d", link, i)
			if os.Symlink(target, tmp) == nil {
				_ = os.Rename(tmp, link)
			}
		}
	}()
	decidedOK, confirmedDenied, caught := 0, 0, 0
	for i := 0; i < 400; i++ {
		in := call("write", map[string]string{"file_path": "link/f", "content": "x"})
		in.ID = llm.CallID(fmt.Sprint("c", i))
		d := c.Decide(ctx, in, e.root)
		c.decided.note(in, d)
		if d.Behavior != Allow {
			continue // decided on the denied side: refused before the tool runs
		}
		decidedOK++
		key := resolve(filepath.Join(e.root, "link", "f")) // the tool resolves again
		err := c.ConfirmFile(ctx, in, key, dshfs.FileID{})
		if within(key, denied) {
			if err == nil {
				confirmedDenied++
			} else {
				caught++
			}
		} else if err != nil {
			t.Errorf("a write resolved into the allowed directory was refused: %v", err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if confirmedDenied > 0 {
		t.Fatalf("%d writes decided on the allowed side were confirmed into the denied directory", confirmedDenied)
	}
	if decidedOK == 0 {
		t.Fatal("no write was allowed: the test checked nothing")
	}
	t.Logf("%d allowed decisions, %d swaps caught at confirmation", decidedOK, caught)
}
