package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dshq/dsh/app"
)

// The architecture overview's plugin table lists app.Plugins in its order,
// with the optional ones marked, so the page readers follow stays the list
// the binary installs.
func TestArchitecturePluginTable(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root(t), "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^\| (\d+) \| ([a-z]+)( \(optional\))? \|`)
	var got []string
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		got = append(got, m[2]+m[3])
	}
	var want []string
	for _, s := range app.Plugins() {
		name := s.Name
		if s.Optional {
			name += " (optional)"
		}
		want = append(want, name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("docs/architecture.md's plugin table lists\n  %s\nbut app.Plugins is\n  %s", strings.Join(got, ", "), strings.Join(want, ", "))
	}
}
