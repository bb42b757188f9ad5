package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/dshq/dsh/llm"
)

// Func builds a [Tool] from a typed function. When info.Parameters is empty
// the schema is inferred from A (field tags `json` and `jsonschema` give names
// and descriptions). The registry validates arguments against the schema
// before Run; Func then decodes them into A.
func Func[A any](info Info, fn func(ctx context.Context, call Call, args A) (Result, error)) Tool {
	if len(info.Parameters) == 0 {
		s, err := jsonschema.For[A](nil)
		if err != nil {
			panic(fmt.Sprintf("tool: inferring schema for %q: %v", info.Name, err))
		}
		b, err := json.Marshal(s)
		if err != nil {
			panic(fmt.Sprintf("tool: encoding schema for %q: %v", info.Name, err))
		}
		info.Parameters = b
	}
	return &funcTool[A]{info: info, fn: fn}
}

type funcTool[A any] struct {
	info Info
	fn   func(context.Context, Call, A) (Result, error)
}

func (t *funcTool[A]) Info() Info { return t.info }

func (t *funcTool[A]) Run(ctx context.Context, call Call) (Result, error) {
	a, err := DecodeArgs[A](call)
	if err != nil {
		return Result{}, err
	}
	return t.fn(ctx, call, a)
}

// DecodeArgs reads a call's effective arguments into a value of type A. It
// is the one way a tool turns arguments into Go values: [Func] uses it,
// and so does every built-in tool that implements [Tool] itself (to add
// presenters or state), so the model reads the same errors from all of
// them. A property of the wrong type is named ("\"limit\" must be an
// integer"). The registry has validated the arguments against the tool's
// schema before Run, so the errors matter for direct callers and lenient
// schemas; a call made outside the registry with no arguments at all
// decodes as {}, like the model's empty string.
func DecodeArgs[A any](call Call) (A, error) {
	var a A
	raw := call.Args
	if raw == nil {
		if strings.TrimSpace(call.Raw) != "" {
			return a, ArgsError(call.Name, "arguments are not valid JSON: "+call.Raw)
		}
		raw = json.RawMessage("{}")
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return a, ArgsError(call.Name, fmt.Sprintf("%q must be %s", te.Field, jsonKind(te.Type)))
		}
		if errors.As(err, &te) {
			return a, ArgsError(call.Name, "arguments must be "+jsonKind(te.Type))
		}
		return a, ArgsError(call.Name, err.Error())
	}
	return a, nil
}

// jsonKind names the JSON value a Go type decodes from, with its article.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a " + t.String()
}

// ArgsError is the error for arguments the tool cannot use. The model reads
// its message, so it names the tool and says what to fix.
func ArgsError(tool, detail string) *llm.Error {
	return &llm.Error{Name: "ToolArgsError", Code: "INVALID_ARGS",
		Message: fmt.Sprintf("invalid arguments for %s: %s", tool, detail)}
}

// validator caches resolved schemas by their JSON text.
type validator struct {
	mu    sync.Mutex
	cache map[string]*jsonschema.Resolved
}

// Validate checks args (a JSON object) against schema and returns an error
// the model can act on, or nil.
func (v *validator) Validate(toolName string, schema json.RawMessage, args json.RawMessage) error {
	if len(schema) == 0 {
		return nil
	}
	v.mu.Lock()
	if v.cache == nil {
		v.cache = map[string]*jsonschema.Resolved{}
	}
	r, ok := v.cache[string(schema)]
	v.mu.Unlock()
	if !ok {
		var s jsonschema.Schema
		if err := json.Unmarshal(schema, &s); err != nil {
			return fmt.Errorf("tool: schema of %q is not valid JSON Schema: %w", toolName, err)
		}
		res, err := s.Resolve(nil)
		if err != nil {
			return fmt.Errorf("tool: schema of %q does not resolve: %w", toolName, err)
		}
		r = res
		v.mu.Lock()
		v.cache[string(schema)] = r
		v.mu.Unlock()
	}
	var inst any
	if err := json.Unmarshal(args, &inst); err != nil {
		return ArgsError(toolName, "arguments are not valid JSON: "+err.Error())
	}
	if err := r.Validate(inst); err != nil {
		msg := strings.TrimPrefix(err.Error(), "validating root: ")
		return ArgsError(toolName, msg)
	}
	return nil
}
