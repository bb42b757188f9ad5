package docgen

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func write(t *testing.T, root, rel, body string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

const goodRecord = `# A good record

Status: implemented

## Context
## Decision
## Alternatives considered
## Consequences
`

func TestScanRecordsFindsLayoutProblems(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "README.md", "# index\n")
	write(t, dir, "implemented/feature/2026-11-30-good-one.md", goodRecord)
	write(t, dir, "stray.md", goodRecord)
	write(t, dir, "accepted/feature/2026-11-30-bad-lifecycle.md", goodRecord)
	write(t, dir, "proposed/ideas/2026-11-30-bad-class.md", goodRecord)
	write(t, dir, "proposed/loose.md", goodRecord)
	write(t, dir, "proposed/feature/Bad_Name.md", goodRecord)
	write(t, dir, "proposed/feature/2026-02-30-no-such-day.md", goodRecord)
	write(t, dir, "proposed/feature/2026-11-30-untitled.md", "Status: proposed\n\n## Context\n")
	write(t, dir, "rejected/feature/2026-11-30-good-one.md", strings.Replace(goodRecord, "implemented", "rejected", 1))
	write(t, dir, "proposed/feature/deeper/2026-11-30-too-deep.md", goodRecord)

	recs, probs, err := ScanRecords(dir)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, r := range recs {
		paths = append(paths, r.Path)
	}
	wantRecs := []string{"implemented/feature/2026-11-30-good-one.md", "rejected/feature/2026-11-30-good-one.md"}
	if !reflect.DeepEqual(paths, wantRecs) {
		t.Errorf("records = %v, want %v", paths, wantRecs)
	}
	got := map[string]string{}
	for _, p := range probs {
		got[p.Path] = p.Msg
	}
	for _, path := range []string{
		"stray.md", "accepted", "proposed/ideas", "proposed/loose.md", "proposed/feature/Bad_Name.md",
		"proposed/feature/2026-02-30-no-such-day.md", "proposed/feature/2026-11-30-untitled.md",
		"rejected/feature/2026-11-30-good-one.md", "proposed/feature/deeper",
	} {
		if _, ok := got[path]; !ok {
			t.Errorf("no problem reported for %s; got %v", path, probs)
		}
	}
	if len(got) != 9 {
		t.Errorf("got %d problems, want 9: %v", len(got), probs)
	}
	r := recs[0]
	if r.Title != "A good record" || r.Lifecycle != "implemented" || r.Class != "feature" || r.Date != "2026-11-30" || r.Topic != "good-one" {
		t.Errorf("record parsed as %+v", r)
	}
}

func TestLintRecord(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "proposed/testing/2026-11-30-x.md", "# X\n\nStatus: implemented\n\n## Context\n```\n## Decision\n```\n")
	probs := LintRecord(dir, Record{Path: "proposed/testing/2026-11-30-x.md", Lifecycle: "proposed"})
	var msgs []string
	for _, p := range probs {
		msgs = append(msgs, p.Msg)
	}
	want := []string{
		`status says "implemented" but the record sits in proposed/`,
		"missing section: ## Decision", // inside a code fence, so it does not count
		"missing section: ## Alternatives considered",
		"missing section: ## Consequences",
	}
	if !reflect.DeepEqual(msgs, want) {
		t.Errorf("problems = %q, want %q", msgs, want)
	}
	write(t, dir, "implemented/testing/2026-11-30-y.md", goodRecord)
	if p := LintRecord(dir, Record{Path: "implemented/testing/2026-11-30-y.md", Lifecycle: "implemented"}); len(p) > 0 {
		t.Errorf("good record: %v", p)
	}
}

func TestIndexRoundTrip(t *testing.T) {
	recs := []Record{
		{Path: "implemented/testing/2026-11-02-b.md", Lifecycle: "implemented", Class: "testing", Date: "2026-11-02", Topic: "b", Title: "B | with a pipe"},
		{Path: "implemented/architecture/2026-11-03-a.md", Lifecycle: "implemented", Class: "architecture", Date: "2026-11-03", Topic: "a", Title: "A"},
	}
	readme := []byte("intro\n\n" + BeginIndex + "\nold\n" + EndIndex + "\n\nfooter\n")
	out, err := UpdateIndex(readme, recs)
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, want := range []string{
		"intro\n\n" + BeginIndex, EndIndex + "\n\nfooter\n",
		"2 records: 0 proposed, 2 implemented, 0 rejected.",
		"### Proposed\n\nNone.",
		"| 2026-11-03 | architecture | [A](implemented/architecture/2026-11-03-a.md) |\n| 2026-11-02 | testing | [B \\| with a pipe](implemented/testing/2026-11-02-b.md) |",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("index lacks %q:\n%s", want, s)
		}
	}
	again, err := UpdateIndex(out, recs)
	if err != nil || string(again) != s {
		t.Errorf("regenerating is not idempotent (err %v)", err)
	}
	if _, err := UpdateIndex([]byte("no markers"), recs); err == nil {
		t.Error("UpdateIndex accepted a README without markers")
	}
}

func TestHeadingsAndSlugs(t *testing.T) {
	md := "# Title\n\n## How to write a front-end\n\n```md\n## Not a heading\n```\n\n## Repeat\n## Repeat\n### `code` and [a link](x.md)!\n"
	var got []string
	for _, h := range Headings([]byte(md)) {
		got = append(got, h.Anchor)
	}
	want := []string{"title", "how-to-write-a-front-end", "repeat", "repeat-1", "code-and-a-link"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("anchors = %v, want %v", got, want)
	}
}

func TestCheckLinks(t *testing.T) {
	root := t.TempDir()
	write(t, root, "docs/target.md", "# Target\n\n## Some Section\n")
	write(t, root, "code/file.go", "package code\n")
	write(t, root, "docs/a.md", strings.Join([]string{
		"# A",
		"[ok file](target.md) [ok anchor](target.md#some-section) [ok dir](../code) [ok code](../code/file.go)",
		"[self](#a) [web](https://example.com/x) [mail](mailto:x@example.com)",
		"[missing](nope.md) [bad anchor](target.md#nope) [bad self](#nope)",
		"[outside](../../elsewhere.md) [absolute](/etc/passwd)",
		"`[in code](nope.md)`",
		"```",
		"[in fence](nope.md)",
		"```",
		"[ref]: missing-ref.md",
	}, "\n"))
	probs, err := CheckLinks(root, []string{"docs/a.md"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range probs {
		got = append(got, p.String())
	}
	want := []string{
		"docs/a.md:4: link nope.md points to a missing file",
		"docs/a.md:4: link target.md#nope names no heading of target.md",
		"docs/a.md:4: link #nope names no heading of a.md",
		"docs/a.md:5: link ../../elsewhere.md leaves the repository",
		"docs/a.md:5: link /etc/passwd is absolute; use a path relative to the file",
		"docs/a.md:10: link missing-ref.md points to a missing file",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestTypeArgs(t *testing.T) {
	in := "*kernel.Chain[*github.com/dshq/dsh/llm.Request,iter.Seq2[github.com/dshq/dsh/llm.Chunk,error]]"
	got := typeArgs(in)
	want := []string{"*github.com/dshq/dsh/llm.Request", "iter.Seq2[github.com/dshq/dsh/llm.Chunk,error]"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("typeArgs = %q", got)
	}
	if d := displayType(got[1]); d != "llm.Stream" {
		t.Errorf("displayType(%q) = %q, want the alias llm.Stream", got[1], d)
	}
	if d := displayType(got[0]); d != "*llm.Request" {
		t.Errorf("displayType(%q) = %q", got[0], d)
	}
	if typeArgs("kernel.Scope") != nil {
		t.Error("a non-generic type has no type arguments")
	}
}

func TestParamRowsKeepSchemaOrder(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{
		"zeta":{"type":"string","description":"last | first"},
		"alpha":{"type":"integer","minimum":1,"maximum":5,"default":2},
		"mode":{"type":"string","enum":["a","b"]},
		"tags":{"type":"array","items":{"type":"string"}},
		"maybe":{"type":["string","null"]}},"required":["alpha"]}`)
	rows, err := paramRows(schema)
	if err != nil {
		t.Fatal(err)
	}
	var names, types []string
	for _, r := range rows {
		names = append(names, r.name)
		types = append(types, r.typ)
	}
	if !slices.Equal(names, []string{"zeta", "alpha", "mode", "tags", "maybe"}) {
		t.Errorf("order = %v", names)
	}
	wantTypes := []string{"string", "integer (1–5)", "string: one of `\"a\"`, `\"b\"`", "array of string", "string or null"}
	if !slices.Equal(types, wantTypes) {
		t.Errorf("types = %q, want %q", types, wantTypes)
	}
	if !rows[1].required || rows[0].required {
		t.Errorf("required flags wrong: %+v", rows)
	}
	if rows[1].desc != "Default: `2`." {
		t.Errorf("default not described: %q", rows[1].desc)
	}
}

// TestCatalogCoversEveryOwner keeps the reflected owners honest: each must
// contribute at least one point.
func TestCatalogCoversEveryOwner(t *testing.T) {
	root, err := FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := ReflectPoints(root)
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, p := range ps {
		per[p.Owner]++
		if p.Mode == "chain" && p.Out == "" {
			t.Errorf("chain %s has no output type", p.Name)
		}
	}
	for _, o := range Owners() {
		name := shortType(reflect.TypeOf(o.Value).Elem().String())
		if per[name] == 0 {
			t.Errorf("owner %s (%s) has no points", name, o.Ctor)
		}
	}
}
