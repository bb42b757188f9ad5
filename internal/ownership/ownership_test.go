package ownership

import "testing"

func TestEveryNamespaceHasAnOwnerThatMayWriteIt(t *testing.T) {
	for n := Namespace(0); n < count; n++ {
		o := Owner(n)
		if o == nil || !o.May(n) {
			t.Errorf("%s: owner %s may not write it", n, o.Name())
		}
		if got, ok := Of(n.String() + "/x"); !ok || got != n {
			t.Errorf("Of(%s/x) = %v, %v", n, got, ok)
		}
		if !Fixtures.May(n) {
			t.Errorf("fixtures may not write %s", n)
		}
		var zero *Token
		if zero.May(n) || (&Token{}).May(n) {
			t.Errorf("a nil or zero token may write %s", n)
		}
	}
}

func TestOf(t *testing.T) {
	for typ, want := range map[string]bool{
		"turn/end": true, "turn": true, "turn/": true, "tool/result": true, "compact/summary": true,
		"permission/rule": true, "todo/write": false, "plugin/x": false, "turnx/end": false, "Turn/end": false,
		"": false, "/turn": false, "my/turn/end": false,
	} {
		if _, got := Of(typ); got != want {
			t.Errorf("Of(%q) owned = %v, want %v", typ, got, want)
		}
	}
}

func TestTokensWriteOnlyTheirNamespaces(t *testing.T) {
	cases := []struct {
		tok  *Token
		may  []Namespace
		mayN []Namespace
	}{
		{Loop, []Namespace{Turn, Step, User, Assistant, Tool, Context, Steering, Prompt, Approval}, []Namespace{Compact, Subagent, Hook, Permission}},
		{Compaction, []Namespace{Compact, Turn, User, Tool}, []Namespace{Step, Assistant, Permission, Hook}},
		{Subagents, []Namespace{Subagent}, []Namespace{Turn, Tool, Permission}},
		{Hooks, []Namespace{Hook}, []Namespace{Turn, Tool, Permission}},
		{Permissions, []Namespace{Permission}, []Namespace{Turn, Tool, Hook}},
	}
	for _, c := range cases {
		for _, n := range c.may {
			if !c.tok.May(n) {
				t.Errorf("%s may not write %s", c.tok.Name(), n)
			}
		}
		for _, n := range c.mayN {
			if c.tok.May(n) {
				t.Errorf("%s may write %s", c.tok.Name(), n)
			}
		}
	}
}
