package term

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
)

func TestRankPaths(t *testing.T) {
	paths := []string{"README.md", "cmd/", "cmd/dsh/", "cmd/dsh/main.go", "ui/term/mention.go", "ui/term/markdown.go", "docs/mention-notes.txt", "internal/x/mainly_other.go"}
	got := rankPaths(paths, "mention", 3)
	if len(got) != 2 || got[0] != "ui/term/mention.go" || got[1] != "docs/mention-notes.txt" {
		t.Fatalf("mention: %q", got)
	}
	if got := rankPaths(paths, "cdm", 5); len(got) == 0 || got[0] != "cmd/dsh/main.go" && got[0] != "cmd/dsh/" && got[0] != "cmd/" {
		t.Fatalf("cdm: %q", got)
	}
	if got := rankPaths(paths, "zzz", 5); len(got) != 0 {
		t.Fatalf("zzz: %q", got)
	}
	if got := rankPaths(paths, "", 10); strings.Join(got, ",") != "cmd/,README.md" {
		t.Fatalf("empty query lists the top level: %q", got)
	}
}

func TestMentionedPaths(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a.go", "my file.txt", "sub/b.go"} {
		p := filepath.Join(dir, f)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got := mentionedPaths(`see @a.go, @"my file.txt" and @sub/ but not me@a.go or @missing.go; @a.go again`, dir)
	if strings.Join(got, "|") != "a.go|my file.txt|sub/" {
		t.Fatalf("%q", got)
	}
}

// Typing @ and part of a name suggests files (not ignored ones), tab
// completes, and the sent message carries the file's content while the
// transcript shows only a note.
func TestMentionCompletesAndAttaches(t *testing.T) {
	ad := scripted.New(scripted.Text("read it"))
	h := startUI(t, useScript(t, ad))
	write := func(rel, content string) {
		p := filepath.Join(h.cwd, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(".gitignore", "build/\n")
	write("src/server/request_handler.go", "package server\n\n// marker-4711\n")
	write("build/request_handler.go", "generated\n")
	write("docs/other.md", "x\n")
	h.send("/model script/m\r")
	h.wait("model set to script/m")
	h.send("explain @reqhand")
	h.wait("› src/server/request_handler.go", "(tab)")
	if strings.Contains(h.screen(), "build/request_handler.go") {
		t.Fatal("an ignored file is suggested")
	}
	h.send("\t")
	h.wait("explain @src/server/request_handler.go ")
	h.send("please\r")
	h.wait("read it", "attached @src/server/request_handler.go (3 lines)")
	reqs := ad.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	last := reqs[0].Messages[len(reqs[0].Messages)-1]
	all := llm.TextOf(last.Content)
	if !strings.Contains(all, "explain @src/server/request_handler.go please") || !strings.Contains(all, "marker-4711") {
		t.Fatalf("the request lacks the file:\n%s", all)
	}
	if strings.Contains(h.screen(), "marker-4711") {
		t.Fatal("the transcript shows the attached content")
	}
	h.exit()
}

// TestMain removes the benchmarks' shared tree.
func TestMain(m *testing.M) {
	code := m.Run()
	if tree100k.dir != "" {
		_ = os.RemoveAll(tree100k.dir)
	}
	os.Exit(code)
}

var tree100k struct {
	once sync.Once
	dir  string
}

// makeTree100k writes 100,000 files (100 × 10 directories of 100) once per
// test binary run.
func makeTree100k(b *testing.B) string {
	tree100k.once.Do(func() {
		dir, err := os.MkdirTemp("", "dsh-mention-bench-")
		if err != nil {
			b.Fatal(err)
		}
		for i := range 100 {
			for j := range 10 {
				d := filepath.Join(dir, fmt.Sprintf("pkg%03d", i), fmt.Sprintf("part%d", j))
				if err := os.MkdirAll(d, 0o755); err != nil {
					b.Fatal(err)
				}
				for k := range 100 {
					if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("file_%03d_handler.go", k)), nil, 0o600); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
		tree100k.dir = dir
	})
	return tree100k.dir
}

// The listing is ready by the time it says so: the UI answers the ready
// callback by asking ready(), and a false answer then was a lost wake-up
// (the prompt stayed at "indexing files…"; seen in CI).
func TestMentionIndexReadyWhenItSaysSo(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 50 {
		got := make(chan bool, 1)
		var ix *mentionIndex
		var mu sync.Mutex
		mu.Lock()
		ix = newMentionIndex(context.Background(), dir, func() {
			mu.Lock()
			defer mu.Unlock()
			got <- ix.ready()
		})
		mu.Unlock()
		if !<-got {
			t.Fatal("the ready callback ran while the index still reported not ready")
		}
		<-ix.done
	}
}

// BenchmarkMentionFirstSuggestions is @ completion from nothing on a
// 100,000-file tree, as the terminal does it: the listing starts on the
// first @ and each batch it streams is ranked until suggestions show.
// ns/op is the time to the first suggestions for "@hand" (matching
// anywhere in the tree); deep-ms is the time to those for a query naming
// one deep directory, which the listing must reach first; listed-ms the
// whole listing.
func BenchmarkMentionFirstSuggestions(b *testing.B) {
	dir := makeTree100k(b)
	var deep, listed time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		more := make(chan struct{}, 1)
		ix := newMentionIndex(context.Background(), dir, func() {
			select {
			case more <- struct{}{}:
			default:
			}
		})
		first := false
		for !first {
			<-more
			first = len(rankPaths(ix.listed(), "hand", mentionShown)) > 0
		}
		b.StopTimer()
		for len(rankPaths(ix.listed(), "p42pt3f7hand", mentionShown)) == 0 {
			select {
			case <-more:
			case <-ix.done:
				if len(rankPaths(ix.listed(), "p42pt3f7hand", mentionShown)) == 0 {
					b.Fatal("no suggestion")
				}
			}
		}
		deep += time.Since(start)
		<-ix.done
		listed += time.Since(start)
		if n := len(ix.listed()); n < 100_000 {
			b.Fatalf("%d paths", n)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(deep.Milliseconds())/float64(b.N), "deep-ms")
	b.ReportMetric(float64(listed.Milliseconds())/float64(b.N), "listed-ms")
}

// BenchmarkMentionRank is one keystroke's ranking over 100,000 paths.
func BenchmarkMentionRank(b *testing.B) {
	dir := makeTree100k(b)
	ix := newMentionIndex(context.Background(), dir, nil)
	<-ix.done
	b.ResetTimer()
	for range b.N {
		if got := rankPaths(ix.listed(), "p42pt3f7hand", mentionShown); len(got) == 0 {
			b.Fatal("no suggestion")
		}
	}
}

// Ranking a listing as it streams (the best so far merged with each new
// batch) finds what ranking the whole listing finds.
func TestRankWhileListing(t *testing.T) {
	var paths []string
	for i := range 3000 {
		paths = append(paths, fmt.Sprintf("pkg%02d/part%d/file_%03d_handler.go", i%37, i%7, i))
	}
	for _, q := range []string{"hand", "p12pt3f", "file_29", ""} {
		var best []string
		for lo := 0; lo < len(paths); lo += 256 {
			best = rankPaths(append(best, paths[lo:min(lo+256, len(paths))]...), q, mentionShown)
		}
		want := rankPaths(paths, q, mentionShown)
		score := func(ps []string) (s []int) {
			for _, p := range ps {
				v, _ := fuzzyScore(p, []byte(strings.ToLower(q)))
				s = append(s, v)
			}
			return s
		}
		if fmt.Sprint(score(best)) != fmt.Sprint(score(want)) || len(want) == 0 && q != "" {
			t.Fatalf("%q: streamed %q, whole %q", q, best, want)
		}
	}
}

// A capped read is said in the attachment's note, whichever of the read
// tool's trailers it ends with; a whole file is not.
func TestMentionNoteSaysWhenCapped(t *testing.T) {
	for trailer, want := range map[string]string{
		"(End of file - total 3 lines)":                                           "attached @f (3 lines)",
		"(Showing lines 1-3 of 90. Use offset=4 to continue.)":                    "attached @f (the first 3 of 90 lines)",
		"(Output capped at 50 KiB. Showing lines 1-3. Use offset=4 to continue.)": "attached @f (the first 3 lines; the file is longer)",
		"(Showing lines 1-3; the file is 2.0 GiB and continues. Use offset=4 to continue.)\n(Some bytes are not valid UTF-8 and are shown as \uFFFD.)": "attached @f (the first 3 lines; the file is longer)",
	} {
		content := "<content>\n     1\ta\n     2\tb\n     3\tc\n\n" + trailer + "\n</content>"
		text := fmt.Sprintf("%s%q kind=\"file\" lines=\"3\"%s>\nbody\n</mention>", mentionTag, "f", readTotal(content))
		if got, ok := mentionNote(text); !ok || got != want {
			t.Errorf("%s: %q, want %q", trailer, got, want)
		}
	}
}
