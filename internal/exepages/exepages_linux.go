package exepages

import (
	"bytes"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Release unmaps the executable's releasable mappings (see releasable)
// from the process with madvise(MADV_DONTNEED). For a private file
// mapping whose pages are all the file's own, that only drops the page
// table entries: the next access maps the same page from the page cache
// again. It does nothing while a tracer is attached (a debugger may have
// written to the text). It is safe while other goroutines run: a page
// one of them needs is faulted back in.
func Release() (Stats, error) {
	if traced() {
		return Stats{}, nil
	}
	path, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return Stats{}, fmt.Errorf("exepages: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &st); err != nil {
		return Stats{}, fmt.Errorf("exepages: %w", err)
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return Stats{}, fmt.Errorf("exepages: %w", err)
	}
	spans, skipped := releasable(smaps, st.Ino, path)
	s := Stats{Skipped: skipped}
	for _, sp := range spans {
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, sp.start, sp.end-sp.start, unix.MADV_DONTNEED); errno != 0 {
			return s, fmt.Errorf("exepages: madvise %#x-%#x: %w", sp.start, sp.end, errno)
		}
		s.Mappings++
		s.Bytes += sp.rss
	}
	return s, nil
}

// traced reports whether a tracer is attached (TracerPid in
// /proc/self/status), or the status cannot be read.
func traced() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return true
	}
	_, rest, ok := bytes.Cut(b, []byte("\nTracerPid:"))
	if !ok {
		return true
	}
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	return string(bytes.TrimSpace(line)) != "0"
}
