package search

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"sync"
)

// Engine is the search seam the tools consume. [*Searcher] is the local
// implementation; every path in a result is slash-separated and relative to
// the result's Dir.
type Engine interface {
	Glob(ctx context.Context, root, pattern string, opts GlobOptions) (*GlobResult, error)
	Grep(ctx context.Context, root string, opts GrepOptions) (*GrepResult, error)
	List(ctx context.Context, root string, opts ListOptions) (*ListResult, error)
}

// Backend names a grep implementation.
type Backend string

const (
	// Auto uses ripgrep when it is on PATH and the Go walker otherwise, or
	// when ripgrep fails for a reason other than the caller's.
	Auto Backend = ""
	// Ripgrep delegates to the rg executable.
	Ripgrep Backend = "ripgrep"
	// Native is the Go walker.
	Native Backend = "native"
)

// Searcher is the local [Engine]. The zero value is ready to use.
type Searcher struct {
	// Backend selects the grep implementation (tests pin one).
	Backend Backend
	// RipgrepPath is the rg executable; empty means "rg" looked up on PATH
	// once, at first use.
	RipgrepPath string
	// Workers bounds the Go walker's parallel file searches; 0 means
	// 2×GOMAXPROCS (file reads block, so a few more workers than CPUs keep
	// the CPUs busy).
	Workers int

	once   sync.Once
	rgPath string
}

// Default is the engine behind the package-level functions.
var Default = &Searcher{}

// Glob runs [Searcher.Glob] on [Default].
func Glob(ctx context.Context, root, pattern string, opts GlobOptions) (*GlobResult, error) {
	return Default.Glob(ctx, root, pattern, opts)
}

// Grep runs [Searcher.Grep] on [Default].
func Grep(ctx context.Context, root string, opts GrepOptions) (*GrepResult, error) {
	return Default.Grep(ctx, root, opts)
}

// List runs [Searcher.List] on [Default].
func List(ctx context.Context, root string, opts ListOptions) (*ListResult, error) {
	return Default.List(ctx, root, opts)
}

// ripgrep returns the rg executable, or "" when there is none. On Windows
// there is never one: the output parser assumes "/" separators.
func (s *Searcher) ripgrep() string {
	s.once.Do(func() {
		if runtime.GOOS == "windows" {
			return
		}
		name := s.RipgrepPath
		if name == "" {
			name = "rg"
		}
		if p, err := exec.LookPath(name); err == nil {
			s.rgPath = p
		}
	})
	return s.rgPath
}

func (s *Searcher) workers() int {
	if s.Workers > 0 {
		return s.Workers
	}
	return 2 * runtime.GOMAXPROCS(0)
}

// ErrNoRipgrep is returned when the Ripgrep backend is required but rg is
// not installed.
var ErrNoRipgrep = errors.New("search: ripgrep (rg) not found on PATH")

func errorf(format string, args ...any) error {
	return fmt.Errorf("search: "+format, args...)
}
