// Package docgen produces and checks dsh's generated documentation: the
// index tables of docs/rfc/README.md, the catalog of interception points and
// built-in tools in docs/catalog.md, and the link and layout rules every
// Markdown file under docs/ must follow.
//
// The two generators (internal/gen/rfcindex and internal/gen/catalog) are
// thin mains over this package, run by `go generate ./docs/...`; the tests in
// package docs call the same functions and fail when a committed file
// differs from what they would write, so a stale index or catalog breaks
// `go test ./...` rather than drifting silently.
package docgen

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Module is the import path of the repository the generators document.
const Module = "github.com/dshq/dsh"

// FindRoot returns the repository root: the nearest directory at or above
// dir whose go.mod declares [Module].
func FindRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && declaresModule(b) {
			return dir, nil
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("docgen: no go.mod for %s at or above the working directory", Module)
		}
		dir = parent
	}
}

func declaresModule(gomod []byte) bool {
	for _, line := range bytes.Split(gomod, []byte("\n")) {
		f := bytes.Fields(line)
		if len(f) == 2 && string(f[0]) == "module" && string(f[1]) == Module {
			return true
		}
	}
	return false
}

// WriteIfChanged writes b to path unless the file already holds exactly b.
// It reports whether it wrote.
func WriteIfChanged(path string, b []byte) (bool, error) {
	old, err := os.ReadFile(path)
	if err == nil && bytes.Equal(old, b) {
		return false, nil
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return false, err
	}
	return true, nil
}
