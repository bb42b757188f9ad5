package skills

import (
	"encoding/json"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// The written-out schema is what skillArgs infers to, so a field added to
// the type (or a changed description) without its schema fails here.
func TestSchemaMatchesTheArgumentType(t *testing.T) {
	s, err := jsonschema.For[skillArgs](nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := (&Skills{}).tool().Info().Parameters; string(got) != string(want) {
		t.Errorf("the schema is\n%s\nbut skillArgs infers\n%s", got, want)
	}
}
