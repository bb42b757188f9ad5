package uuid

import (
	"regexp"
	"testing"
)

var canonical = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestNewIsVersion4 checks the form every consumer relies on, and that
// ids do not repeat.
func TestNewIsVersion4(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := New()
		if !canonical.MatchString(id) {
			t.Fatalf("%q is not a canonical version 4 UUID", id)
		}
		if seen[id] {
			t.Fatalf("%q repeated", id)
		}
		seen[id] = true
	}
}
