// Command rfcindex regenerates the index tables of docs/rfc/README.md from
// the design records themselves: the title from each record's first
// heading, lifecycle and class from its folders, the date from its file
// name. It refuses to write while any record breaks the layout rules.
//
// Run it through `go generate ./docs/...`; -check only reports whether the
// index is current (exit status 1 when it is not).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dshq/dsh/internal/gen/docgen"
)

func main() {
	check := flag.Bool("check", false, "report whether the index is current instead of writing it")
	flag.Parse()
	if err := run(*check); err != nil {
		fmt.Fprintln(os.Stderr, "rfcindex:", err)
		os.Exit(1)
	}
}

func run(check bool) error {
	root, err := docgen.FindRoot(".")
	if err != nil {
		return err
	}
	dir := filepath.Join(root, "docs", "rfc")
	recs, probs, err := docgen.ScanRecords(dir)
	if err != nil {
		return err
	}
	for _, r := range recs {
		probs = append(probs, docgen.LintRecord(dir, r)...)
	}
	if len(probs) > 0 {
		for _, p := range probs {
			fmt.Fprintln(os.Stderr, "docs/rfc/"+p.String())
		}
		return fmt.Errorf("%d problem(s) in docs/rfc; fix them first", len(probs))
	}
	readme := filepath.Join(dir, "README.md")
	old, err := os.ReadFile(readme)
	if err != nil {
		return err
	}
	updated, err := docgen.UpdateIndex(old, recs)
	if err != nil {
		return err
	}
	if check {
		if string(updated) != string(old) {
			return fmt.Errorf("docs/rfc/README.md is stale; run go generate ./docs/...")
		}
		return nil
	}
	_, err = docgen.WriteIfChanged(readme, updated)
	return err
}
