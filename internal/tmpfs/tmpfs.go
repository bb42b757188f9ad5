// Package tmpfs gives tests a small, really full-able file system: a tmpfs
// mounted in a private mount namespace, for the disk-full tests of the
// binary's front doors.
package tmpfs

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// FS is a small tmpfs mounted in a private mount namespace, held open by
// a sleeping process: nothing is mounted where other processes can see it,
// and when the test ends (or dies: the holder gets SIGKILL when its parent
// goes) the namespace and the mount go with the holder. Commands run inside
// it through nsenter; the test reaches its files through
// /proc/<holder>/root.
type FS struct {
	t      testing.TB
	holder *exec.Cmd
	// Dir is the mount point, as seen inside the namespace.
	Dir string
}

// New mounts a tmpfs of size (e.g. "1m") at a fresh directory. It
// fails the test when that is impossible (not root, no unshare): a disk-full
// test that silently skips would let the regression back in. Set
// DSH_TEST_NO_TMPFS=1 to skip these tests on a machine that cannot mount.
func New(t testing.TB, size string) *FS {
	t.Helper()
	if os.Getenv("DSH_TEST_NO_TMPFS") == "1" {
		t.Skip("DSH_TEST_NO_TMPFS=1: not mounting a tmpfs")
	}
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c",
		`mount -t tmpfs -o size=`+size+`,mode=0700 dsh-test "$0" && echo mounted && exec sleep 3600`, dir)
	cmd.SysProcAttr = holderAttr()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("cannot mount a tmpfs for the disk-full tests (they need root and unshare; DSH_TEST_NO_TMPFS=1 skips them): %v", err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "mounted" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("cannot mount a tmpfs for the disk-full tests (they need root and unshare; DSH_TEST_NO_TMPFS=1 skips them): %s", stderr.String())
	}
	fs := &FS{t: t, holder: cmd, Dir: dir}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return fs
}

// Enter is the command prefix that runs a command inside the namespace,
// in directory wd.
func (f *FS) Enter(wd string) []string {
	// cd inside the namespace: nsenter's --wd opens the directory before it
	// enters, which leaves a working directory getcwd(2) cannot name.
	return []string{"nsenter", "-t", strconv.Itoa(f.holder.Process.Pid), "-m", "--", "sh", "-c", `cd "$0" && exec "$@"`, wd}
}

// Path is where the test process reaches p (a path inside the namespace).
func (f *FS) Path(p string) string {
	return filepath.Join("/proc", strconv.Itoa(f.holder.Process.Pid), "root", p)
}

// Fill writes a file at p (inside the namespace) until the file system is
// full.
func (f *FS) Fill(p string) {
	f.t.Helper()
	w, err := os.OpenFile(f.Path(p), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		f.t.Fatal(err)
	}
	defer w.Close()
	buf := make([]byte, 4096)
	for i := 0; ; i++ {
		if _, err := w.Write(buf); err != nil {
			if !strings.Contains(err.Error(), "no space left") {
				f.t.Fatal(err)
			}
			break
		}
		if i > 1<<16 {
			f.t.Fatal("the tmpfs never filled up")
		}
	}
	// A few single bytes too, so not even a small write fits.
	for i := 0; i < 4096; i++ {
		if _, err := w.Write(buf[:1]); err != nil {
			break
		}
	}
}

// Free removes the file Fill wrote.
func (f *FS) Free(p string) {
	f.t.Helper()
	if err := os.Remove(f.Path(p)); err != nil {
		f.t.Fatal(err)
	}
}
