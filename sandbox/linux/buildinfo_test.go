package linux

import (
	"debug/buildinfo"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// readBuildInfo reads what debug/buildinfo reads, from this test binary
// and from a freshly built helper (the file FindHelper reads in use).
func TestReadBuildInfoAgreesWithDebugBuildinfo(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{self, buildHelper(t, t.TempDir(), HelperBinary)} {
		want, err := buildinfo.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := readBuildInfo(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: build information differs (-debug/buildinfo +ours):\n%s", p, d)
		}
		if got.GoVersion == "" || got.Main.Path == "" {
			t.Errorf("%s: empty build information %+v", p, got)
		}
	}
}

// Files that are not Go executables, or are cut short, are refused with
// a reason, never read as an empty build.
func TestReadBuildInfoRefusesOtherFiles(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cases := map[string][]byte{
		"text":        []byte("#!/bin/sh\necho hi\n"),
		"empty":       nil,
		"elf header":  b[:64],
		"first half":  b[:len(b)/2],
		"no sections": append(append([]byte{}, b[:40]...), make([]byte, 24)...),
	}
	for name, data := range cases {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		if err := os.WriteFile(p, data, 0o755); err != nil {
			t.Fatal(err)
		}
		if bi, err := readBuildInfo(p); err == nil {
			t.Errorf("%s: read %+v, want an error", name, bi)
		}
	}
}
