package core_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/settings"
)

type counter struct{ n int }

func provider(v *counter) func(*settings.Config) core.Plugin {
	return func(*settings.Config) core.Plugin {
		return func(_ context.Context, h *core.Host, scope *kernel.Scope) error { return core.Provide(h, scope, v) }
	}
}

func needer(got **counter) func(*settings.Config) core.Plugin {
	return func(*settings.Config) core.Plugin {
		return func(_ context.Context, h *core.Host, _ *kernel.Scope) error {
			c, err := core.Need[*counter](h)
			*got = c
			return err
		}
	}
}

func TestCheckOrder(t *testing.T) {
	ok := []core.Spec{{Name: "a"}, {Name: "b", Needs: []string{"a"}}, {Name: "c", After: []string{"a", "b"}}}
	if err := core.CheckOrder(ok); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		list []core.Spec
		want string
	}{
		{[]core.Spec{{Name: "b", Needs: []string{"a"}}, {Name: "a"}}, "b is listed before a"},
		{[]core.Spec{{Name: "b", After: []string{"a"}}, {Name: "a"}}, "b is listed before a"},
		{[]core.Spec{{Name: "a", Needs: []string{"a"}}}, "a is listed before a"},
		{[]core.Spec{{Name: "a", Needs: []string{"x"}}}, "not in the list"},
		{[]core.Spec{{Name: "a"}, {Name: "a"}}, "listed twice"},
		{[]core.Spec{{}}, "no name"},
	}
	for _, c := range cases {
		if err := core.CheckOrder(c.list); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.list, err, c.want)
		}
	}
}

func TestInstallProvidesInOrder(t *testing.T) {
	h, err := core.New(core.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	v := &counter{n: 7}
	var got *counter
	list := []core.Spec{
		{Name: "provider", New: provider(v)},
		{Name: "user", Needs: []string{"provider"}, New: needer(&got)},
	}
	if err := h.Install(context.Background(), list, settings.Empty(), nil); err != nil {
		t.Fatal(err)
	}
	if got != v {
		t.Fatalf("need got %v", got)
	}
	if err := h.Install(context.Background(), list[:1], settings.Empty(), nil); err == nil || !strings.Contains(err.Error(), "already provided") {
		t.Errorf("a second provider of one type: %v", err)
	}
	if names := h.Installed(); strings.Join(names, ",") != "provider,user" {
		t.Errorf("installed %v", names)
	}
}

func TestInstallRefusesWhatANeedLacks(t *testing.T) {
	var got *counter
	// Listed out of order: refused before anything installs.
	h, _ := core.New(core.Options{})
	defer h.Close(context.Background())
	err := h.Install(context.Background(), []core.Spec{{Name: "user", Needs: []string{"provider"}, New: needer(&got)}, {Name: "provider", New: provider(&counter{})}}, settings.Empty(), nil)
	if err == nil || !strings.Contains(err.Error(), "listed before") {
		t.Fatalf("out of order: %v", err)
	}
	// A needed optional plugin switched off.
	h2, _ := core.New(core.Options{})
	defer h2.Close(context.Background())
	err = h2.Install(context.Background(), []core.Spec{{Name: "provider", Optional: true, New: provider(&counter{})}, {Name: "user", Needs: []string{"provider"}, New: needer(&got)}},
		settings.Empty(), func(string) bool { return false })
	if err == nil || !strings.Contains(err.Error(), "switched off") {
		t.Fatalf("switched off: %v", err)
	}
	// An undeclared need fails at install, naming what is missing.
	h3, _ := core.New(core.Options{})
	defer h3.Close(context.Background())
	err = h3.Install(context.Background(), []core.Spec{{Name: "user", New: needer(&got)}}, settings.Empty(), nil)
	if err == nil || !strings.Contains(err.Error(), "no core_test.counter is provided") {
		t.Fatalf("undeclared: %v", err)
	}
}

func TestProvideEndsWithScope(t *testing.T) {
	h, _ := core.New(core.Options{})
	defer h.Close(context.Background())
	unload, err := h.Use(context.Background(), "p", provider(&counter{})(nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := core.Lookup[*counter](h); !ok {
		t.Fatal("not provided")
	}
	if err := unload(); err != nil {
		t.Fatal(err)
	}
	if _, ok := core.Lookup[*counter](h); ok {
		t.Fatal("still provided after unload")
	}
}

func TestConfigErrorsKeepTheirMessage(t *testing.T) {
	h, _ := core.New(core.Options{})
	defer h.Close(context.Background())
	_, err := h.Use(context.Background(), "p", func(context.Context, *core.Host, *kernel.Scope) error {
		return core.ConfigError(errors.New("rule \"Bash(\" is malformed"))
	})
	if !errors.Is(err, core.ErrConfig) || err.Error() != `rule "Bash(" is malformed` {
		t.Fatalf("%v", err)
	}
	_, err = h.Use(context.Background(), "p", func(context.Context, *core.Host, *kernel.Scope) error { return errors.New("boom") })
	if errors.Is(err, core.ErrConfig) || !strings.Contains(err.Error(), "plugin p: boom") {
		t.Fatalf("%v", err)
	}
}
