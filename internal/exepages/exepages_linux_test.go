package exepages

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"testing"

	"golang.org/x/sys/unix"
)

// exeRss is the resident size of this test binary's read-only mappings.
func exeRss(t *testing.T) int64 {
	t.Helper()
	path, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &st); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	spans, _ := releasable(b, st.Ino, path)
	var n int64
	for _, s := range spans {
		n += s.rss
	}
	return n
}

func TestReleaseUnmapsAndTheProcessRunsOn(t *testing.T) {
	if traced() {
		t.Skip("a tracer is attached: Release does nothing")
	}
	before := exeRss(t)
	if before == 0 {
		t.Fatal("no resident pages of the executable before Release")
	}
	s, err := Release()
	if err != nil {
		t.Fatal(err)
	}
	if s.Mappings == 0 || s.Bytes == 0 {
		t.Fatalf("Release = %+v, want the executable's mappings released", s)
	}
	// Reading smaps again runs code, which faults some pages back in, but
	// without the release the figure could only have grown.
	after := exeRss(t)
	if after >= before {
		t.Fatalf("executable resident %d KiB after Release, %d before: not released", after>>10, before>>10)
	}
	// Code and data of the binary fault back in: work that reads type
	// data, tables and code of several packages gives the same answers.
	b, err := json.Marshal(map[string][]int{"a": {1, 2}})
	if err != nil || string(b) != `{"a":[1,2]}` {
		t.Fatalf("json after Release = %s, %v", b, err)
	}
	if m := regexp.MustCompile(`(\w+)@(\w+)`).FindStringSubmatch("x me@host y"); fmt.Sprint(m) != "[me@host me host]" {
		t.Fatalf("regexp after Release = %v", m)
	}
	if got := exeRss(t); got == 0 {
		t.Fatal("no pages faulted back in after running code")
	}
}
