package fs_test

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/dshq/dsh/fs"
	"github.com/dshq/dsh/llm"
)

func TestErrorConvertsToHarnessError(t *testing.T) {
	cause := os.ErrNotExist
	var err error = fs.Errorf(fs.CodeNotFound, "read", "/a", "cannot read %q: not found", "/a")
	err.(*fs.Error).Err = cause
	wrapped := fmt.Errorf("tool: %w", err)

	he, ok := llm.AsError(wrapped)
	if !ok {
		t.Fatal("llm.AsError did not find the harness error")
	}
	if he.Name != "FsError" || he.Code != fs.CodeNotFound || he.Message != `cannot read "/a": not found` {
		t.Fatalf("harness error = %+v", he)
	}
	if !errors.Is(wrapped, os.ErrNotExist) {
		t.Fatal("cause lost")
	}
	if got := fs.CodeOf(wrapped); got != fs.CodeNotFound {
		t.Fatalf("CodeOf = %q", got)
	}
	if got := fs.CodeOf(errors.New("plain")); got != "" {
		t.Fatalf("CodeOf(plain) = %q", got)
	}
}

func TestNormalizeNewlines(t *testing.T) {
	for in, want := range map[string]string{
		"a\r\nb\r\n": "a\nb\n",
		"a\rb\n":     "a\rb\n",
		"a\r\r\nb":   "a\r\nb",
		"":           "",
	} {
		if got := fs.NormalizeNewlines(in); got != want {
			t.Errorf("NormalizeNewlines(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestVersionZero(t *testing.T) {
	if !(fs.Version{}).IsZero() || (fs.Version{Size: 1}).IsZero() {
		t.Fatal("IsZero wrong")
	}
	if fs.TypeFile.String() != "file" || fs.TypeDir.String() != "directory" || fs.TypeOther.String() != "other" {
		t.Fatal("Type names wrong")
	}
}
