package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestStartPathLeavesOut fails when a package whose initialisation was
// taken off every dsh start (issue 25; GODEBUG=inittrace=1) is linked
// into dsh again. Each entry says why it was costly and what stands in.
func TestStartPathLeavesOut(t *testing.T) {
	banned := map[string]string{
		// 2–4 ms and 260 KB of regexps compiled at init (linkify); the
		// terminal's own parsers are in ui/term/gfm.go.
		"github.com/yuin/goldmark/extension": "ui/term's gfm extensions",
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if instead, ok := banned[p]; ok {
			why, _ := exec.Command("go", "list", "-f", `{{.ImportPath}}: {{join .Imports " "}}`, "-deps", ".").Output()
			var importers []string
			for _, l := range strings.Split(string(why), "\n") {
				if name, imps, ok := strings.Cut(l, ": "); ok && strings.Contains(" "+imps+" ", " "+p+" ") {
					importers = append(importers, name)
				}
			}
			t.Errorf("dsh links %s again (imported by %v); use %s", p, importers, instead)
		}
	}
}
