package headless_test

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dshq/dsh/headless"
	"github.com/dshq/dsh/internal/fakeanthropic"
)

// rssFile is a process's resident file pages (RssFile in its status,
// which stays readable although dsh makes itself non-dumpable), in KiB.
func rssFile(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1
	}
	_, rest, _ := strings.Cut(string(b), "\nRssFile:")
	f := strings.Fields(rest)
	if len(f) == 0 {
		return -1
	}
	n, _ := strconv.ParseInt(f[0], 10, 64)
	return n
}

// dsh -p gives back its executable's start-up pages when its
// ContinuedAt'th step starts (internal/exepages): the model's request of
// that step finds dsh holding megabytes fewer of its binary's pages than
// the one before did, though a tool ran between them; with
// DSH_EXE_PAGES=keep it holds as many.
func TestStartUpPagesReleasedOnceTheRunIsLong(t *testing.T) {
	if _, err := os.Stat("/proc/self/smaps"); err != nil {
		t.Skip("no /proc")
	}
	for _, keep := range []bool{false, true} {
		var (
			pid  atomic.Int64
			mu   sync.Mutex
			seen []int64
		)
		e := newEnv(t, func(req fakeanthropic.Request) fakeanthropic.Reply {
			mu.Lock()
			seen = append(seen, rssFile(int(pid.Load())))
			n := len(seen)
			mu.Unlock()
			if n < headless.ContinuedAt {
				return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: "t1", Name: "Read", Input: map[string]any{"file_path": "notes.txt"}}}}
			}
			return fakeanthropic.Reply{Text: "done"}
		})
		if err := os.WriteFile(e.dir+"/notes.txt", []byte("a note\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		extra := []string{}
		if keep {
			extra = append(extra, "DSH_EXE_PAGES=keep")
		}
		cmd := exec.Command(dshBinPath(), "-p", "read the notes")
		cmd.Dir, cmd.Env = e.dir, e.Environ(extra...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid.Store(int64(cmd.Process.Pid))
		if err := cmd.Wait(); err != nil {
			t.Fatalf("keep=%v: %v\n%s", keep, err, out.Bytes())
		}
		mu.Lock()
		got := append([]int64(nil), seen...)
		mu.Unlock()
		n := headless.ContinuedAt
		if len(got) != n || got[n-2] <= 0 || got[n-1] <= 0 {
			t.Fatalf("keep=%v: RssFile at the requests %v KiB, want %d readings", keep, got, n)
		}
		t.Logf("keep=%v: RssFile at requests %d and %d: %d, %d KiB", keep, n-1, n, got[n-2], got[n-1])
		// Released, it falls by megabytes; kept, it stays within a page
		// or two of where it was (no new code runs between the requests).
		if released := got[n-1] < got[n-2]-2048; released == keep {
			t.Errorf("keep=%v: RssFile %d KiB at request %d, %d at request %d", keep, got[n-2], n-1, got[n-1], n)
		}
	}
}
