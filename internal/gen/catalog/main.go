// Command catalog regenerates docs/catalog.md: every interception point
// (found by reflection over the structs that own them, plus a source scan
// for points declared elsewhere) and every built-in tool with its
// parameters and description.
//
// Run it through `go generate ./docs/...`; -check only reports whether the
// catalog is current (exit status 1 when it is not).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dshq/dsh/internal/gen/docgen"
)

func main() {
	check := flag.Bool("check", false, "report whether the catalog is current instead of writing it")
	flag.Parse()
	if err := run(*check); err != nil {
		fmt.Fprintln(os.Stderr, "catalog:", err)
		os.Exit(1)
	}
}

func run(check bool) error {
	root, err := docgen.FindRoot(".")
	if err != nil {
		return err
	}
	out, err := docgen.Catalog(root)
	if err != nil {
		return err
	}
	path := filepath.Join(root, "docs", "catalog.md")
	if check {
		old, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !bytes.Equal(old, out) {
			return fmt.Errorf("docs/catalog.md is stale; run go generate ./docs/...")
		}
		return nil
	}
	_, err = docgen.WriteIfChanged(path, out)
	return err
}
