package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
)

type listing []store.Info

func (l listing) List(context.Context, store.Query) ([]store.Info, error) { return l, nil }

func info(id string, last int64) store.Info {
	in := store.Info{Header: session.Header{ID: session.ID(id)}}
	in.LastActivity = last
	in.Title = "about " + id
	return in
}

func TestResolve(t *testing.T) {
	l := listing{info("abc12345-0000", 1), info("abc99999-0000", 3), info("def00000-0000", 2), info("abc", 4)}
	ctx := context.Background()
	for typed, want := range map[string]string{
		"def":           "def00000-0000",
		"abc1":          "abc12345-0000",
		"abc":           "abc", // an exact id wins over longer ones it starts
		" abc9 ":        "abc99999-0000",
		"abc12345-0000": "abc12345-0000",
	} {
		got, err := store.Resolve(ctx, l, typed)
		if err != nil || string(got) != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", typed, got, err, want)
		}
	}
	if _, err := store.Resolve(ctx, l, "zzz"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown prefix: %v", err)
	}
	if _, err := store.Resolve(ctx, l, ""); !errors.Is(err, store.ErrInvalidID) {
		t.Errorf("empty: %v", err)
	}
	_, err := store.Resolve(ctx, listing{info("abc12345-0000", 1), info("abc99999-0000", 3)}, "abc")
	var amb *store.AmbiguousError
	if !errors.As(err, &amb) || len(amb.Candidates) != 2 || amb.Candidates[0].Header.ID != "abc99999-0000" {
		t.Fatalf("ambiguous: %v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "abc12345-0000") || !strings.Contains(msg, "about abc99999-0000") {
		t.Fatalf("the candidates are not listed: %s", msg)
	}
}
