//go:build linux

package helper

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGoCacheProgram speaks the GOCACHEPROG protocol to the cache program
// as the go command does: it answers from the user's cache (read only),
// keeps what is put in its private cache, and never writes the user's.
func TestGoCacheProgram(t *testing.T) {
	private, seed := t.TempDir(), t.TempDir()
	seedAction, seedOutput := bytes.Repeat([]byte{0xab}, 32), bytes.Repeat([]byte{0xcd}, 32)
	// An entry of the user's cache in the go command's own format.
	must(t, os.MkdirAll(filepath.Join(seed, "ab"), 0o755))
	must(t, os.MkdirAll(filepath.Join(seed, "cd"), 0o755))
	must(t, os.WriteFile(cachePath(seed, seedOutput, "d"), []byte("seeded"), 0o644))
	must(t, os.WriteFile(cachePath(seed, seedAction, "a"), fmt.Appendf(nil, "v1 %x %x %20d %20d\n", seedAction, seedOutput, 6, 1700000000000000000), 0o644))
	// A damaged one: its output is missing.
	brokenAction := bytes.Repeat([]byte{0xef}, 32)
	must(t, os.MkdirAll(filepath.Join(seed, "ef"), 0o755))
	must(t, os.WriteFile(cachePath(seed, brokenAction, "a"), fmt.Appendf(nil, "v1 %x %x %20d %20d\n", brokenAction, bytes.Repeat([]byte{0x11}, 32), 3, 1), 0o644))
	before := tree(t, seed)

	newAction, newOutput := bytes.Repeat([]byte{0x01}, 32), bytes.Repeat([]byte{0x02}, 32)
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	_ = enc.Encode(goRequest{ID: 1, Command: "get", ActionID: seedAction})
	_ = enc.Encode(goRequest{ID: 2, Command: "get", ActionID: newAction})
	_ = enc.Encode(goRequest{ID: 3, Command: "put", ActionID: newAction, OutputID: newOutput, BodySize: 5})
	in.WriteString(`"` + base64.StdEncoding.EncodeToString([]byte("built")) + "\"\n\n")
	_ = enc.Encode(goRequest{ID: 4, Command: "get", ActionID: newAction})
	_ = enc.Encode(goRequest{ID: 5, Command: "get", ActionID: brokenAction})
	_ = enc.Encode(goRequest{ID: 6, Command: "close"})
	var out bytes.Buffer
	c := &goCache{dir: private, seed: seed}
	if err := c.serve(&in, &out); err != nil {
		t.Fatal(err)
	}
	var resps []goResponse
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var r goResponse
		must(t, json.Unmarshal(sc.Bytes(), &r))
		resps = append(resps, r)
	}
	if len(resps) != 7 || strings.Join(resps[0].KnownCommands, ",") != "get,put,close" {
		t.Fatalf("responses %+v", resps)
	}
	read := func(p string) string { b, _ := os.ReadFile(p); return string(b) }
	if r := resps[1]; r.Miss || r.Size != 6 || !bytes.Equal(r.OutputID, seedOutput) || read(r.DiskPath) != "seeded" {
		t.Errorf("seeded get: %+v", r)
	}
	if !resps[2].Miss {
		t.Errorf("unknown action: %+v", resps[2])
	}
	if r := resps[3]; r.Err != "" || read(r.DiskPath) != "built" || !strings.HasPrefix(r.DiskPath, private) {
		t.Errorf("put: %+v", r)
	}
	if r := resps[4]; r.Miss || r.Size != 5 || read(r.DiskPath) != "built" {
		t.Errorf("get after put: %+v", r)
	}
	if !resps[5].Miss {
		t.Errorf("an entry whose output is gone must miss: %+v", resps[5])
	}
	if after := tree(t, seed); after != before {
		t.Errorf("the user's cache changed:\n%s\nthen\n%s", before, after)
	}
}

func tree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	must(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d %v\n", p, fi.Size(), fi.ModTime().UnixNano())
		return nil
	}))
	return b.String()
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
