package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/dshq/dsh/session"
)

// AmbiguousError says a session id prefix names more than one session.
type AmbiguousError struct {
	Prefix     string
	Candidates []Info // newest activity first
}

func (e *AmbiguousError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "session id %q is ambiguous: it starts %d sessions", e.Prefix, len(e.Candidates))
	for i, c := range e.Candidates {
		if i == 10 {
			fmt.Fprintf(&b, "\n  … and %d more", len(e.Candidates)-i)
			break
		}
		title := c.Title
		if r := []rune(title); len(r) > 60 {
			title = string(r[:60]) + "…"
		}
		fmt.Fprintf(&b, "\n  %s  %s", c.Header.ID, strings.ReplaceAll(title, "\n", " "))
	}
	return b.String()
}

// Lister lists stored sessions (a Coordinator or a Backend).
type Lister interface {
	List(ctx context.Context, q Query) ([]Info, error)
}

// Resolve turns what a user typed for a session id into the id: an exact
// id, or a prefix that starts exactly one stored session's id. No match
// is an error wrapping ErrNotFound; several are an *AmbiguousError listing
// them.
func Resolve(ctx context.Context, l Lister, typed string) (session.ID, error) {
	typed = strings.TrimSpace(typed)
	if typed == "" {
		return "", fmt.Errorf("empty session id: %w", ErrInvalidID)
	}
	infos, err := l.List(ctx, Query{})
	if err != nil {
		return "", err
	}
	var matches []Info
	for _, in := range infos {
		id := string(in.Header.ID)
		if id == typed {
			return in.Header.ID, nil
		}
		if strings.HasPrefix(id, typed) {
			matches = append(matches, in)
		}
	}
	switch len(matches) {
	case 0:
		return "", fmt.Errorf("no session %q: %w", typed, ErrNotFound)
	case 1:
		return matches[0].Header.ID, nil
	}
	sort.SliceStable(matches, func(i, j int) bool { return matches[i].LastActivity > matches[j].LastActivity })
	return "", &AmbiguousError{Prefix: typed, Candidates: matches}
}

// IsAmbiguous reports whether err is an *AmbiguousError.
func IsAmbiguous(err error) bool {
	var a *AmbiguousError
	return errors.As(err, &a)
}
