package searchtool

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/dshq/dsh/search"
)

// The written-out schemas are what the argument types infer to (with the
// refinements: grep's output_mode enum, its head_limit default, minimum
// 0 for counts), so a field added to a type without its schema fails here.
func TestSchemasMatchTheArgumentTypes(t *testing.T) {
	for _, limit := range []int{DefaultGrepLimit, 4242} {
		grep := schemaFor[grepArgs](func(p map[string]*jsonschema.Schema) {
			p["output_mode"].Enum = []any{string(search.FilesWithMatches), string(search.Content), string(search.Count)}
			p["head_limit"].Description += fmt.Sprintf(" (default %d)", limit)
			delete(p, "include")
			nonNegative(p, "-A", "-B", "-C", "head_limit")
		})
		want := map[string]json.RawMessage{GlobName: schemaFor[globArgs](nil), GrepName: grep, LSName: schemaFor[lsArgs](nil)}
		for _, tl := range Tools(Options{GrepLimit: limit}) {
			name := tl.Info().Name
			if got := string(tl.Info().Parameters); got != string(want[name]) {
				t.Errorf("%s (limit %s): the schema is\n%s\nbut its type infers\n%s", name, strconv.Itoa(limit), got, want[name])
			}
		}
	}
}

// schemaFor infers A's JSON Schema and lets patch refine it (enums,
// minimums). Extra properties are allowed: the tool layer ignores keys it
// does not declare rather than failing a call over them.
func schemaFor[A any](patch func(props map[string]*jsonschema.Schema)) json.RawMessage {
	s, err := jsonschema.For[A](nil)
	if err != nil {
		panic(fmt.Sprintf("searchtool: schema: %v", err))
	}
	s.AdditionalProperties = nil
	for _, p := range s.Properties {
		// Optional pointer fields infer as ["null", T]; the model should
		// omit them rather than send null.
		if len(p.Types) == 2 && p.Types[0] == "null" {
			p.Type, p.Types = p.Types[1], nil
		}
	}
	if patch != nil {
		patch(s.Properties)
		s.PropertyOrder = slices.DeleteFunc(s.PropertyOrder, func(name string) bool { return s.Properties[name] == nil })
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("searchtool: schema: %v", err))
	}
	return b
}

func nonNegative(props map[string]*jsonschema.Schema, names ...string) {
	zero := 0.0
	for _, n := range names {
		props[n].Minimum = &zero
	}
}
