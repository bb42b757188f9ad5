package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dshq/dsh/internal/tmpfs"
)

// The exit status of a run whose session could not be saved (README).
const exitNotSaved = 7

// diskFull is one store's DSH_HOME on a 1 MiB tmpfs.
type diskFull struct {
	t     *testing.T
	fs    *tmpfs.FS
	home  string // inside the namespace
	model *actingModel
	iv    invocation
}

func newDiskFull(t *testing.T, store string, replies ...string) *diskFull {
	fs := tmpfs.New(t, "1m")
	home := filepath.Join(fs.Dir, "home")
	if err := os.Mkdir(fs.Path(home), 0o700); err != nil {
		t.Fatal(err)
	}
	if store == "sqlite" {
		sqliteSettings(t, fs.Path(home))
	}
	m, url := newActingModel(t, replies...)
	return &diskFull{t: t, fs: fs, home: home, model: m,
		iv: invocation{dir: t.TempDir(), home: home, baseURL: url, ns: fs}}
}

func (d *diskFull) fillPath() string { return filepath.Join(d.home, "fill") }

// notSaved checks a run that could not save its session.
func (d *diskFull) notSaved(r run, what string) {
	d.t.Helper()
	if r.code != exitNotSaved {
		d.t.Fatalf("%s: exit %d, want %d\nstdout %s\nstderr %s", what, r.code, exitNotSaved, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "could not be saved") || !strings.Contains(r.stderr, d.home) ||
		!(strings.Contains(r.stderr, "no space left on device") || strings.Contains(r.stderr, "disk is full") || strings.Contains(r.stderr, "full or failing disk")) {
		d.t.Fatalf("%s: stderr does not say what happened and where: %q", what, r.stderr)
	}
}

// export returns the stored events of the only session, checking every
// turn is closed.
func (d *diskFull) export() (id string, types []string, text string) {
	d.t.Helper()
	ls := d.iv.run(d.t, "sessions", "--json")
	var infos []struct {
		Header struct {
			ID string `json:"id"`
		} `json:"header"`
	}
	if err := json.Unmarshal([]byte(ls.stdout), &infos); err != nil || len(infos) != 1 {
		d.t.Fatalf("sessions: %v %+v", err, ls)
	}
	id = infos[0].Header.ID
	exp := d.iv.run(d.t, "sessions", "export", id)
	if exp.code != 0 {
		d.t.Fatalf("export: %+v", exp)
	}
	open := false
	for i, line := range strings.Split(strings.TrimSpace(exp.stdout), "\n") {
		var e struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			d.t.Fatalf("export line %d: %v", i+1, err)
		}
		switch e.Type {
		case "turn/start":
			if open {
				d.t.Fatalf("turn/start inside an open turn at line %d", i+1)
			}
			open = true
		case "turn/end":
			open = false
		}
		types = append(types, e.Type)
	}
	if open {
		d.t.Fatalf("the stored log ends inside an open turn: %v", types)
	}
	return id, types, exp.stdout
}

func (d *diskFull) lastRequest() string {
	d.model.deepseek.mu.Lock()
	defer d.model.deepseek.mu.Unlock()
	b, _ := json.Marshal(d.model.deepseek.requests[len(d.model.deepseek.requests)-1]["messages"])
	return string(b)
}

const model = "deepseek/deepseek-chat"

// big pads a prompt past the slack a full file system still has in the last
// pages of existing files (a small append to the log could still fit).
var big = " " + strings.Repeat("padding ", 3000)

// A full disk before the run: the prompt cannot be recorded, so the model
// is never called; the run exits non-zero saying why, in every output
// format; after space is freed, --continue carries on from what was saved.
func TestDiskFullBeforeTheRun(t *testing.T) {
	for _, store := range []string{"jsonl", "sqlite"} {
		t.Run(store, func(t *testing.T) {
			d := newDiskFull(t, store, textReply("first answer"), textReply("third answer"))
			if r := d.iv.run(t, "-p", "--model", model, "first prompt"); r.code != 0 {
				t.Fatalf("first run: %+v", r)
			}
			d.fs.Fill(d.fillPath())
			d.notSaved(d.iv.run(t, "-p", "-c", "--model", model, "second prompt"+big), "continue on a full disk")
			// A new session on a full disk, with a JSON result.
			r := d.iv.run(t, "-p", "--model", model, "--output-format", "json", "fresh prompt"+big)
			d.notSaved(r, "new session on a full disk (json)")
			var res map[string]any
			if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
				t.Fatalf("json result: %v\n%s", err, r.stdout)
			}
			if res["is_error"] != true || res["subtype"] != "error_during_execution" || res["error_kind"] != "not_saved" || !strings.Contains(fmt.Sprint(res["errors"]), "could not be saved") {
				t.Fatalf("json result %v", res)
			}
			sj := d.iv.run(t, "-p", "--model", model, "--output-format", "stream-json", "fresh prompt"+big)
			d.notSaved(sj, "new session on a full disk (stream-json)")
			lines := strings.Split(strings.TrimSpace(sj.stdout), "\n")
			var last map[string]any
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last["type"] != "result" || last["error_kind"] != "not_saved" {
				t.Fatalf("stream-json last line %q: %v", lines[len(lines)-1], err)
			}
			if n := d.model.requestCount(); n != 1 {
				t.Fatalf("the model was called %d times; only the first run may call it", n)
			}

			d.fs.Free(d.fillPath())
			c := d.iv.run(t, "-p", "-c", "--model", model, "third prompt")
			if c.code != 0 || strings.TrimSpace(c.stdout) != "third answer" {
				t.Fatalf("continue after freeing space: %+v", c)
			}
			if h := d.lastRequest(); !strings.Contains(h, "first prompt") || !strings.Contains(h, "first answer") || !strings.Contains(h, "third prompt") {
				t.Fatalf("continued history %s", h)
			}
			_, _, text := d.export()
			for _, want := range []string{"first prompt", "first answer", "third prompt", "third answer"} {
				if !strings.Contains(text, want) {
					t.Fatalf("the stored session lacks %q:\n%s", want, text)
				}
			}
		})
	}
}

// The disk fills during a turn (a command the model runs fills it): the
// step cannot be recorded, so the turn stops there, before the next model
// call, and the run exits non-zero saying why; after space is freed,
// --continue resumes with the prompt and everything saved before it.
func TestDiskFullMidTurn(t *testing.T) {
	for _, store := range []string{"jsonl", "sqlite"} {
		t.Run(store, func(t *testing.T) {
			d := newDiskFull(t, store)
			d.model.deepseek.setReplies(
				toolReply("call_1", "bash", map[string]string{"command": "head -c 4000000 /dev/zero > " + d.fillPath() + " 2>/dev/null; seq 1 4000", "description": "fill the disk"}),
				textReply("must not be asked"),
			)
			// The command fills dsh's own home, which the sandbox hides.
			r := d.iv.run(t, "-p", "--model", model, "--permission-mode", "bypassPermissions", "--sandbox", "danger-full-access", "fill the disk please")
			d.notSaved(r, "a turn that fills the disk")
			if !strings.Contains(r.stderr, "cannot write the log file") || !strings.Contains(r.stderr, `"msg":"session flush failed"`) {
				t.Fatalf("the log could not be written, so its records belong on stderr: %q", r.stderr)
			}
			if n := d.model.requestCount(); n != 1 {
				t.Fatalf("the model was called %d times after the step could not be saved", n)
			}

			d.fs.Free(d.fillPath())
			d.model.deepseek.mu.Lock()
			d.model.deepseek.replies = []string{textReply("carrying on")}
			d.model.deepseek.mu.Unlock()
			c := d.iv.run(t, "-p", "-c", "--model", model, "go on")
			if c.code != 0 || strings.TrimSpace(c.stdout) != "carrying on" {
				t.Fatalf("continue after freeing space: %+v", c)
			}
			if h := d.lastRequest(); !strings.Contains(h, "fill the disk please") || !strings.Contains(h, "go on") {
				t.Fatalf("continued history %s", h)
			}
			_, types, _ := d.export()
			if types[len(types)-1] != "turn/end" || !contains(types, "user/message") {
				t.Fatalf("stored events %v", types)
			}
		})
	}
}
