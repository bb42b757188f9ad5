package jsonv

import (
	"encoding/json"
	"strings"
	"testing"
)

func FuzzValid(f *testing.F) {
	for _, s := range []string{``, `1`, ` {"a":[1,2.5e-3,true,false,null,"\u00e9\n"]} `, `{"a":}`, `[1,]`, `"\x"`, `-`, `01`, `1.`, `1e`, `"abc`, "\"\x01\"", strings.Repeat("[", 10001) + strings.Repeat("]", 10001), `{"a":1}{"b":2}`, `nul`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid = %v", b, got, want)
		}
	})
}
