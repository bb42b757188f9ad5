package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/tool"
)

type decodeArgs struct {
	Path  string   `json:"path"`
	Limit int      `json:"limit"`
	Ratio float64  `json:"ratio"`
	Tags  []string `json:"tags"`
	Deep  struct {
		On bool `json:"on"`
	} `json:"deep"`
}

// DecodeArgs names the property of the wrong type and says which JSON
// value it wants; arguments that are not JSON say so; no arguments at all
// decode as {} (the registry's reading of the model's "").
func TestDecodeArgs(t *testing.T) {
	for _, c := range []struct {
		args, raw, want string
	}{
		{`{"path":7}`, "", `invalid arguments for probe: "path" must be a string`},
		{`{"limit":1.5}`, "", `"limit" must be an integer`},
		{`{"ratio":"x"}`, "", `"ratio" must be a number`},
		{`{"tags":"x"}`, "", `"tags" must be an array`},
		{`{"deep":[]}`, "", `"deep" must be an object`},
		{`{"deep":{"on":"yes"}}`, "", `"deep.on" must be a boolean`},
		{`[1]`, "", `arguments must be an object`},
		{"", "{not json", `arguments are not valid JSON: {not json`},
	} {
		call := tool.Call{Name: "probe", Raw: c.raw}
		if c.args != "" {
			call.Args = json.RawMessage(c.args)
		}
		_, err := tool.DecodeArgs[decodeArgs](call)
		var le *llm.Error
		if !errors.As(err, &le) || le.Code != "INVALID_ARGS" || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s%s: %v, want INVALID_ARGS with %q", c.args, c.raw, err, c.want)
		}
	}
	a, err := tool.DecodeArgs[decodeArgs](tool.Call{Name: "probe"})
	if err != nil || a.Path != "" {
		t.Fatalf("no arguments: %+v, %v", a, err)
	}
	a, err = tool.DecodeArgs[decodeArgs](tool.Call{Name: "probe", Args: json.RawMessage(`{"path":"x","limit":3,"tags":["a"],"deep":{"on":true}}`)})
	if err != nil || a.Path != "x" || a.Limit != 3 || len(a.Tags) != 1 || !a.Deep.On {
		t.Fatalf("decoded %+v, %v", a, err)
	}
}

// A Func tool decodes through DecodeArgs: the same errors, before the
// function runs.
func TestFuncDecodesThroughDecodeArgs(t *testing.T) {
	ran := false
	f := tool.Func(tool.Info{Name: "probe", Parameters: json.RawMessage(`{"type":"object"}`)}, func(context.Context, tool.Call, decodeArgs) (tool.Result, error) {
		ran = true
		return tool.TextResult("ok"), nil
	})
	_, err := f.Run(context.Background(), tool.Call{Name: "probe", Args: json.RawMessage(`{"limit":"many"}`)})
	if err == nil || !strings.Contains(err.Error(), `"limit" must be an integer`) || ran {
		t.Fatalf("err %v, ran %v", err, ran)
	}
}
