package task

import (
	"encoding/json"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// The written-out schema is what the argument type infers to, so a field
// added to args (or a changed description) without its schema fails here.
func TestSchemaMatchesTheArgumentType(t *testing.T) {
	s, err := jsonschema.For[args](nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, provider := range []string{"spawn", "fork"} {
		got := Tool("task", provider, nil, nil, nil).Info().Parameters
		if string(got) != string(want) {
			t.Errorf("%s: the schema is\n%s\nbut args infers\n%s", provider, got, want)
		}
	}
}
