package cli

import (
	"fmt"
	"slices"
	"testing"

	"github.com/spf13/pflag"
)

// listFlag parses, types and prints as pflag's stringArray and stringSlice
// do, for the same command lines: each flag is defined on two flag sets,
// one with pflag's value and one with dsh's, the same arguments parsed by
// both, and the resulting lists, the flag's Type and String, its DefValue
// (what help prints) and GetStringArray/GetStringSlice compared.
func TestListFlagMatchesPflag(t *testing.T) {
	uses := [][]string{
		nil,
		{"a"},
		{"a", "b"},
		{"Bash(git diff:*)", "Read"},
		{"x,y", "z"},
		{`"quoted, with comma"`, "plain"},
		{"with \"inner\" quote"},
		{""},
		{"a b", " lead", "trail "},
	}
	for _, split := range []bool{false, true} {
		for _, vals := range uses {
			var args []string
			for _, v := range vals {
				args = append(args, "--list="+v)
			}
			var theirs, ours []string
			ref, mine := pflag.NewFlagSet("ref", pflag.ContinueOnError), pflag.NewFlagSet("mine", pflag.ContinueOnError)
			if split {
				ref.StringSliceVar(&theirs, "list", nil, "u")
				stringSliceVar(mine, &ours, "list", "u")
			} else {
				ref.StringArrayVar(&theirs, "list", nil, "u")
				stringArrayVar(mine, &ours, "list", "u")
			}
			name := fmt.Sprintf("split=%v %q", split, args)
			errRef, errMine := ref.Parse(args), mine.Parse(args)
			if (errRef == nil) != (errMine == nil) {
				t.Errorf("%s: pflag's error %v, dsh's %v", name, errRef, errMine)
				continue
			}
			if !slices.Equal(theirs, ours) || (theirs == nil) != (ours == nil) {
				t.Errorf("%s: pflag gives %#v, dsh %#v", name, theirs, ours)
			}
			r, m := ref.Lookup("list"), mine.Lookup("list")
			if r.Value.Type() != m.Value.Type() || r.Value.String() != m.Value.String() || r.DefValue != m.DefValue {
				t.Errorf("%s: pflag's type %q string %q default %q; dsh's %q %q %q", name,
					r.Value.Type(), r.Value.String(), r.DefValue, m.Value.Type(), m.Value.String(), m.DefValue)
			}
			get := (*pflag.FlagSet).GetStringArray
			if split {
				get = (*pflag.FlagSet).GetStringSlice
			}
			gr, er := get(ref, "list")
			gm, em := get(mine, "list")
			if !slices.Equal(gr, gm) || (er == nil) != (em == nil) {
				t.Errorf("%s: pflag's getter %#v (%v), dsh's %#v (%v)", name, gr, er, gm, em)
			}
			if sv, ok := m.Value.(pflag.SliceValue); !ok || !slices.Equal(sv.GetSlice(), r.Value.(pflag.SliceValue).GetSlice()) {
				t.Errorf("%s: GetSlice differs (or not a SliceValue)", name)
			}
		}
	}
}
