package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dshq/dsh/internal/gen/docgen"
)

const regenerate = "run `go generate ./docs/...` and commit the result"

func root(t *testing.T) string {
	t.Helper()
	r, err := docgen.FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRFCLayout keeps every design record at
// {proposed,implemented,rejected}/{class}/YYYY-MM-DD-topic.md, titled, with
// a status line that agrees with its folder and the required sections.
func TestRFCLayout(t *testing.T) {
	dir := filepath.Join(root(t), "docs", "rfc")
	recs, probs, err := docgen.ScanRecords(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		probs = append(probs, docgen.LintRecord(dir, r)...)
	}
	for _, p := range probs {
		t.Errorf("docs/rfc/%s", p)
	}
	if len(recs) == 0 {
		t.Error("no design records found under docs/rfc")
	}
}

// TestRFCIndexFresh fails when the index tables of docs/rfc/README.md do
// not match the records on disk.
func TestRFCIndexFresh(t *testing.T) {
	dir := filepath.Join(root(t), "docs", "rfc")
	recs, _, err := docgen.ScanRecords(dir)
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := docgen.UpdateIndex(readme, recs)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(readme) {
		t.Errorf("docs/rfc/README.md is stale (%s):\n%s", regenerate, firstDiff(string(readme), string(want)))
	}
}

// TestCatalogFresh fails when docs/catalog.md differs from what the code's
// registrations produce.
func TestCatalogFresh(t *testing.T) {
	r := root(t)
	want, err := docgen.Catalog(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(r, "docs", "catalog.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("docs/catalog.md is stale (%s):\n%s", regenerate, firstDiff(string(got), string(want)))
	}
}

// TestCatalogPointNamesUnique guards the catalog's assumption that a point
// name identifies one point.
func TestCatalogPointNamesUnique(t *testing.T) {
	ps, err := docgen.ReflectPoints(root(t))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, p := range ps {
		where := p.Owner + "." + p.Field
		if p.Name == "" {
			t.Errorf("%s is an unnamed point; construct it with kernel.New…(name)", where)
			continue
		}
		if prev, dup := seen[p.Name]; dup {
			t.Errorf("point name %q is used by both %s and %s", p.Name, prev, where)
		}
		seen[p.Name] = where
	}
}

// TestMarkdownLinks fails when a relative link in the docs, the examples or
// the root README points to a missing file or heading.
func TestMarkdownLinks(t *testing.T) {
	r := root(t)
	files, err := docgen.MarkdownFiles(r)
	if err != nil {
		t.Fatal(err)
	}
	probs, err := docgen.CheckLinks(r, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probs {
		t.Error(p)
	}
}

// firstDiff shows where two texts part ways.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl || i >= len(g) || i >= len(w) {
			return fmt.Sprintf("first difference at line %d", i+1) + ":\n  committed: " + gl + "\n  generated: " + wl
		}
	}
	return "(no line differs; check the trailing newline)"
}
