package tool

import (
	"context"
	"encoding/json"
	"fmt"
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
	var a A
	if len(call.Args) > 0 {
		if err := json.Unmarshal(call.Args, &a); err != nil {
			return Result{}, ArgsError(t.info.Name, err.Error())
		}
	}
	return t.fn(ctx, call, a)
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
