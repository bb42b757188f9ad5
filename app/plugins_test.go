package app

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/settings"
)

// The application's plugin list is in an order its own declarations
// accept: no plugin before one it needs or runs after.
func TestPluginOrder(t *testing.T) {
	list := Plugins()
	if err := core.CheckOrder(list); err != nil {
		t.Fatal(err)
	}
	if last := list[len(list)-1].Name; last != "permission" {
		t.Errorf("the permission plugin must be last (outermost on tools/pre-execute), the list ends with %s", last)
	}
	// Moving any plugin right before one it declares is refused.
	for i, s := range list {
		for _, dep := range slices.Concat(s.Needs, s.After) {
			j := slices.IndexFunc(list, func(x core.Spec) bool { return x.Name == dep })
			moved := slices.Clone(list)
			moved = slices.Delete(moved, i, i+1)
			moved = slices.Insert(moved, j, s)
			if err := core.CheckOrder(moved); err == nil || !strings.Contains(err.Error(), s.Name+" is listed before") {
				t.Errorf("%s moved before %s: %v", s.Name, dep, err)
			}
		}
	}
}

// A plugin's declared needs are real: it installs with them, and fails
// (naming what is missing) without any one of them.
func TestPluginNeedsAreReal(t *testing.T) {
	list := Plugins()
	byName := map[string]core.Spec{}
	for _, s := range list {
		byName[s.Name] = s
	}
	var closure func(name string, into map[string]bool)
	closure = func(name string, into map[string]bool) {
		into[name] = true
		for _, d := range byName[name].Needs {
			closure(d, into)
		}
	}
	install := func(keep map[string]bool) error {
		var sub []core.Spec
		for _, s := range list {
			if keep[s.Name] {
				s = byName[s.Name]
				s.After = nil // what runs after optional plugins is tested by the whole app
				sub = append(sub, s)
			}
		}
		h, err := core.New(core.Options{Site: core.Site{Home: t.TempDir(), Cwd: t.TempDir(), Getenv: func(string) string { return "" }, NoSync: true}})
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close(context.Background())
		return h.Install(context.Background(), sub, settings.Empty(), nil)
	}
	checked := 0
	for _, s := range list {
		keep := map[string]bool{}
		closure(s.Name, keep)
		if err := install(keep); err != nil {
			t.Errorf("%s with its needs %v: %v", s.Name, s.Needs, err)
		}
		for _, d := range s.Needs {
			without := map[string]bool{}
			for n := range keep {
				without[n] = n != d
			}
			// Drop the need from the declaration too, so the list is
			// accepted and the plugin itself has to notice.
			s2 := s
			s2.Needs = slices.DeleteFunc(slices.Clone(s.Needs), func(x string) bool { return x == d })
			byName[s.Name] = s2
			err := install(without)
			byName[s.Name] = s
			if err == nil || !strings.Contains(err.Error(), "is provided") {
				t.Errorf("%s installed without %s, which it declares it needs: %v", s.Name, d, err)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no plugin declares a need: the test checks nothing")
	}
}
