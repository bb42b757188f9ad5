package jsonl

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/storetest"
)

func TestMain(m *testing.M) {
	if storetest.CrashChild(factory) {
		return
	}
	goleak.VerifyTestMain(m)
}

// logPath finds the log of id under root.
func logPath(t testing.TB, root string, id session.ID) string {
	t.Helper()
	enc, err := store.EncodeSegment(string(id))
	if err != nil {
		t.Fatal(err)
	}
	m, err := filepath.Glob(filepath.Join(root, "*", enc+".jsonl"))
	if err != nil || len(m) != 1 {
		t.Fatalf("log of %q: %v %v", id, m, err)
	}
	return m[0]
}

func appendFile(t testing.TB, p string, data string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
}

// replaceLine replaces the 1-based line n of the file at p.
func replaceLine(t testing.TB, p string, n int, with string) {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	lines[n-1] = []byte(with + "\n")
	if err := os.WriteFile(p, bytes.Join(lines, nil), 0o600); err != nil {
		t.Fatal(err)
	}
}

var factory = storetest.Factory{
	Open: func(dir string) (store.Backend, error) { return Open(dir, Options{}) },
	Tear: func(t testing.TB, dir string, id session.ID) {
		appendFile(t, logPath(t, dir, id), `{"type":"assistant/chunk","seq":99,"da`)
	},
	SetVersion: func(t testing.TB, dir string, id session.ID, v int) {
		p := logPath(t, dir, id)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		data = bytes.Replace(data, []byte(`"version":0`), []byte(`"version":`+strconv.Itoa(v)), 1)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
	},
	Corrupt: func(t testing.TB, dir string, id session.ID) string {
		replaceLine(t, logPath(t, dir, id), 4, `{"type":"step/start","seq":2,"time":1,"data":{"turn":1,"st`)
		return "unparsable committed event at line 4"
	},
}

func TestContract(t *testing.T) { storetest.Run(t, factory) }

func TestCrash(t *testing.T) {
	storetest.Crash(t, factory, storetest.CrashRuns(100), 4, 40*time.Millisecond)
}
