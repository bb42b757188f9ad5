package exepages

import (
	"testing"
)

// smapsText is /proc/self/smaps of a dynamically linked dsh, cut to the
// fields releasable reads, with the mappings that must be told apart.
const smapsText = `00400000-00402000 r--p 00000000 fe:00 77 /opt/my tools/dsh
Size:                  8 kB
Rss:                   8 kB
Anonymous:             0 kB
00402000-014f4000 r-xp 00002000 fe:00 77 /opt/my tools/dsh
Size:              17352 kB
Rss:               12568 kB
Anonymous:             0 kB
014f4000-026ff000 r--p 010f4000 fe:00 77 /opt/my tools/dsh
Size:              18476 kB
Rss:                9480 kB
Anonymous:             0 kB
026ff000-02700000 r--p 022fe000 fe:00 77 /opt/my tools/dsh
Size:                  4 kB
Rss:                   4 kB
Anonymous:             4 kB
02700000-028cf000 rw-p 022ff000 fe:00 77 /opt/my tools/dsh
Size:               1852 kB
Rss:                 844 kB
Anonymous:           260 kB
028cf000-0491f000 rw-p 00000000 00:00 0 
Size:              33088 kB
Rss:                  40 kB
Anonymous:            40 kB
7f0000000000-7f0000028000 r--p 00000000 fe:00 91 /usr/lib/x86_64-linux-gnu/libc.so.6
Size:                160 kB
Rss:                 160 kB
Anonymous:             0 kB
7f0000028000-7f00001b0000 r-xp 00028000 fe:00 91 /usr/lib/x86_64-linux-gnu/libc.so.6
Size:               1568 kB
Rss:                 900 kB
Anonymous:             0 kB
7f1000000000-7f1000001000 r--p 00000000 fe:00 78 /opt/my tools/dsh-other
Size:                  4 kB
Rss:                   4 kB
Anonymous:             0 kB
7f2000000000-7f2000010000 r--p 00000000 fe:00 77 /opt/my tools/dsh
Size:                 64 kB
Rss:                   0 kB
Anonymous:             0 kB
`

func TestReleasableKeepsPrivateCopiesAndOtherFiles(t *testing.T) {
	spans, skipped := releasable([]byte(smapsText), 77, "/opt/my tools/dsh")
	want := []span{
		{0x400000, 0x402000, 8 << 10},
		{0x402000, 0x14f4000, 12568 << 10},
		{0x14f4000, 0x26ff000, 9480 << 10},
	}
	if len(spans) != len(want) {
		t.Fatalf("releasable = %+v, want %+v", spans, want)
	}
	for i := range want {
		if spans[i] != want[i] {
			t.Errorf("span %d = %+v, want %+v", i, spans[i], want[i])
		}
	}
	// The RELRO page (read-only, but written by the loader before) is
	// the one read-only mapping of the executable kept for its copies.
	if skipped != 1 {
		t.Errorf("skipped = %d, want 1 (the RELRO page)", skipped)
	}
}

func TestReleasableDeletedExecutable(t *testing.T) {
	text := "00402000-014f4000 r-xp 00002000 fe:00 77 /tmp/dsh (deleted)\nRss: 100 kB\nAnonymous: 0 kB\n"
	spans, _ := releasable([]byte(text), 77, "/tmp/dsh")
	if len(spans) != 1 || spans[0].rss != 100<<10 {
		t.Fatalf("releasable = %+v, want the text of the replaced binary", spans)
	}
	if spans, _ := releasable([]byte(text), 78, "/tmp/dsh"); len(spans) != 0 {
		t.Fatalf("releasable with another inode = %+v, want none", spans)
	}
}
