package settings

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"sort"
	"strings"
)

// Section is one top-level key of the settings files, declared by the
// capability that owns it (as a [Key]). The application's [Schema] is the
// sections of its plugins.
type Section interface {
	// Key is the top-level key ("compaction", "permissions").
	Key() string
	check(path string, raw json.RawMessage) *Error
	police(f File, raw json.RawMessage) (json.RawMessage, string, error)
}

// Key is a top-level settings key whose value is a T, owned by the
// capability whose config type T is. T's JSON field names are the keys
// inside it; unknown ones are errors, as are values of the wrong type.
type Key[T any] struct {
	Name string
	// Merge overlays a higher layer's value on a lower one's. Nil: the
	// higher layer's value replaces the lower one's.
	Merge func(lower, higher T) T
	// Validate checks one layer's value; its error is reported with the
	// file and key. An error from [Invalid] names a key inside the value.
	Validate func(T) error
	// Policy strips what a layer may not choose (a project choosing
	// bypassPermissions): it returns the value to keep (ok false drops the
	// whole key from that layer) and a warning, "" when nothing changed.
	Policy func(layer Layer, path string, v T) (keep T, ok bool, warning string)
}

// Value is one layer's value of a key.
type Value[T any] struct {
	Layer Layer
	Path  string
	Value T
}

// Key implements [Section].
func (k Key[T]) Key() string { return k.Name }

// Get returns the merged value over the layers in force (the zero value
// when none sets the key). Each call decodes afresh.
func (k Key[T]) Get(c *Config) T {
	var acc T
	first := true
	for _, v := range k.Layers(c) {
		if first || k.Merge == nil {
			acc, first = v.Value, false
			continue
		}
		acc = k.Merge(acc, v.Value)
	}
	return acc
}

// Layers returns each layer's own value, lowest first, for capabilities
// whose meaning depends on where a value came from (rules name their
// file; project servers need trust).
func (k Key[T]) Layers(c *Config) []Value[T] {
	if c == nil {
		return nil
	}
	var out []Value[T]
	for _, f := range c.files {
		raw, ok := f.keys[k.Name]
		if !ok {
			continue
		}
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			continue // validated when loaded; unreachable
		}
		out = append(out, Value[T]{Layer: f.Layer, Path: f.Path, Value: v})
	}
	return out
}

// Set reports whether any layer in force sets the key.
func (k Key[T]) Set(c *Config) bool {
	if c == nil {
		return false
	}
	for _, f := range c.files {
		if f.Has(k.Name) {
			return true
		}
	}
	return false
}

// Flag returns a command-line layer setting the key to v; name is the
// flag ("--model"), which errors and rule sources then name.
func (k Key[T]) Flag(name string, v T) File {
	return k.In(LayerCLI, name, v)
}

// In returns a layer (of any kind) setting the key to v, for [From] and
// [Config.With].
func (k Key[T]) In(layer Layer, path string, v T) File {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte("null") // check reports it
	}
	return File{Layer: layer, Path: path, keys: map[string]json.RawMessage{k.Name: b}}
}

// Join combines layers built in code into one (several flags of one
// command line given as one layer).
func Join(layer Layer, path string, files ...File) File {
	out := File{Layer: layer, Path: path, keys: map[string]json.RawMessage{}}
	for _, f := range files {
		maps.Copy(out.keys, f.keys)
	}
	return out
}

func (k Key[T]) check(path string, raw json.RawMessage) *Error {
	var probe any
	if err := json.Unmarshal(raw, &probe); err != nil {
		return &Error{Path: path, Key: k.Name, Reason: err.Error()}
	}
	if err := checkKeys(probe, reflect.TypeFor[T](), k.Name); err != nil {
		err.Path = path
		return err
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			key := k.Name
			if te.Field != "" {
				key = join(k.Name, te.Field)
			}
			return &Error{Path: path, Key: key, Reason: fmt.Sprintf("expected %s, got %s", kindName(te.Type), te.Value)}
		}
		return &Error{Path: path, Key: k.Name, Reason: err.Error()}
	}
	if k.Validate != nil {
		if err := k.Validate(v); err != nil {
			var ie *invalid
			if errors.As(err, &ie) {
				return &Error{Path: path, Key: join(k.Name, ie.key), Reason: ie.reason}
			}
			return &Error{Path: path, Key: k.Name, Reason: err.Error()}
		}
	}
	return nil
}

func (k Key[T]) police(f File, raw json.RawMessage) (json.RawMessage, string, error) {
	if k.Policy == nil {
		return raw, "", nil
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return raw, "", nil
	}
	keep, ok, warn := k.Policy(f.Layer, f.Path, v)
	if warn == "" {
		return raw, "", nil
	}
	if !ok {
		return nil, warn, nil
	}
	b, err := json.Marshal(keep)
	if err != nil {
		return nil, "", fmt.Errorf("settings: %s: %s: %w", f.Path, k.Name, err)
	}
	return b, warn, nil
}

type invalid struct{ key, reason string }

func (e *invalid) Error() string { return e.key + ": " + e.reason }

// Invalid is a validation error for a key inside a section's value
// ("defaultMode" inside "permissions"), so the report names the full path.
func Invalid(key, format string, args ...any) error {
	return &invalid{key: key, reason: fmt.Sprintf(format, args...)}
}

// ---- merge helpers ----

// MergeMaps merges by key, the higher layer winning.
func MergeMaps[M ~map[string]V, V any](lower, higher M) M {
	if len(higher) == 0 {
		return lower
	}
	out := make(M, len(lower)+len(higher))
	maps.Copy(out, lower)
	maps.Copy(out, higher)
	return out
}

// JoinText joins texts in layer order with a blank line.
func JoinText(lower, higher string) string {
	switch {
	case lower == "":
		return higher
	case higher == "":
		return lower
	}
	return lower + "\n\n" + higher
}

// ---- strict decoding ----

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64, reflect.Float64, reflect.Int32, reflect.Uint, reflect.Uint64:
		return "a number"
	case reflect.Slice:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return t.String()
}

var rawType = reflect.TypeFor[json.RawMessage]()

// checkKeys reports the first key that no field of t accepts.
func checkKeys(v any, t reflect.Type, path string) *Error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawType {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil // type errors are reported by Unmarshal
		}
		fields := map[string]reflect.StructField{}
		var names []string
		for i := range t.NumField() {
			f := t.Field(i)
			name := strings.Split(f.Tag.Get("json"), ",")[0]
			if name == "" || name == "-" || !f.IsExported() {
				continue
			}
			fields[name] = f
			names = append(names, name)
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			f, ok := fields[k]
			p := join(path, k)
			if !ok {
				reason := "unknown key"
				if s := suggest(k, names); s != "" {
					reason += fmt.Sprintf(" (did you mean %q?)", s)
				}
				return &Error{Key: p, Reason: reason}
			}
			if err := checkKeys(obj[k], f.Type, p); err != nil {
				return err
			}
		}
	case reflect.Map:
		if obj, ok := v.(map[string]any); ok {
			keys := make([]string, 0, len(obj))
			for k := range obj {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if err := checkKeys(obj[k], t.Elem(), join(path, k)); err != nil {
					return err
				}
			}
		}
	case reflect.Slice:
		if arr, ok := v.([]any); ok {
			for i, x := range arr {
				if err := checkKeys(x, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// suggest returns the closest known key within a small edit distance.
func suggest(k string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := distance(strings.ToLower(k), strings.ToLower(n)); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev = cur
	}
	return prev[len(b)]
}

// Latest is the higher layer's value unless it is the zero value.
func Latest[T comparable](lower, higher T) T {
	var zero T
	if higher == zero {
		return lower
	}
	return higher
}
