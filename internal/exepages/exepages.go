// Package exepages gives back the pages of dsh's own executable that only
// its start-up used.
//
// Go runs every linked package's initialisation at start, and the kernel
// maps each page of the executable a start touches together with its
// 64 KB neighbourhood (fault-around): by the time dsh is ready, about
// 20 MiB of its binary is mapped into the process, most of it code, type
// data and function tables that start-up read once and nothing reads
// again. Those pages count in the process's resident set for as long as
// it runs, under every whole-process memory figure. Release unmaps the
// executable's read-only mappings once start-up is over; the pages stay in
// the page cache, and what the process still uses faults back in (from
// memory, not the disk) the next time it runs. See
// docs/rfc/implemented/architecture/2026-12-04-release-start-up-pages.md.
package exepages

import (
	"bytes"
	"strconv"
	"sync"
)

// Env turns the release off ("keep"): for measuring with and without it
// from one binary, and for debugging.
const Env = "DSH_EXE_PAGES"

// span is one mapping of the executable that may be released.
type span struct {
	start, end uintptr
	rss        int64 // resident bytes when it was read
}

// Stats is what one Release did.
type Stats struct {
	Mappings int   // mappings of the executable released
	Bytes    int64 // of their pages resident before
	Skipped  int   // read-only mappings kept because they hold private copies
}

var once sync.Once

// ReleaseOnce releases the executable's start-up pages the first time it
// is called and does nothing after that; getenv(Env) == "keep" turns it
// off. Errors are not reported: nothing depends on the release, and the
// process is as it was before when it fails.
func ReleaseOnce(getenv func(string) string) {
	if getenv(Env) == "keep" {
		return
	}
	once.Do(func() { _, _ = Release() })
}

// releasable picks, from the text of /proc/self/smaps, the mappings of
// the executable (by its inode and path) that can be unmapped without
// losing anything: private, not writable, and holding no anonymous pages.
// A read-only mapping with anonymous pages holds private copies that the
// file does not have — the RELRO page the dynamic loader wrote before it
// made it read-only, or a debugger's breakpoints in the text — and
// dropping those would bring back the file's bytes, so it is skipped.
func releasable(smaps []byte, ino uint64, path string) (spans []span, skipped int) {
	var cur *span
	anon := int64(0)
	finish := func() {
		if cur != nil {
			if anon == 0 && cur.rss > 0 {
				spans = append(spans, *cur)
			} else if anon != 0 {
				skipped++
			}
		}
		cur, anon = nil, 0
	}
	for line := range bytes.Lines(smaps) {
		line = bytes.TrimRight(line, "\n")
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		if bytes.HasSuffix(f[0], []byte(":")) {
			// A field of the current mapping ("Rss:   1234 kB").
			if cur == nil || len(f) < 2 {
				continue
			}
			n, err := strconv.ParseInt(string(f[1]), 10, 64)
			if err != nil {
				continue
			}
			switch string(f[0]) {
			case "Rss:":
				cur.rss = n << 10
			case "Anonymous:":
				anon = n
			}
			continue
		}
		// A mapping's header: start-end perms offset dev inode [path].
		finish()
		if len(f) < 6 {
			continue
		}
		perms := f[1]
		if len(perms) < 4 || perms[0] != 'r' || perms[1] != '-' || perms[3] != 'p' {
			continue
		}
		if n, err := strconv.ParseUint(string(f[4]), 10, 64); err != nil || n != ino {
			continue
		}
		name := string(bytes.Join(f[5:], []byte(" ")))
		if name != path && name != path+" (deleted)" {
			continue
		}
		lo, hi, ok := bytes.Cut(f[0], []byte("-"))
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(string(lo), 16, 64)
		end, err2 := strconv.ParseUint(string(hi), 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		cur = &span{start: uintptr(start), end: uintptr(end)}
	}
	finish()
	return spans, skipped
}
