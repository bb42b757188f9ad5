package headless

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

// schemaCheck makes a turn's final answer a JSON value that conforms to a
// JSON Schema (--json-schema, the SDK's outputFormat): the model is told
// the schema; when it means to stop with an answer that does not parse or
// does not validate, the problem is steered back and it tries again, at
// most retries times; the parsed value becomes structured_output.
type schemaCheck struct {
	raw      json.RawMessage
	resolved *jsonschema.Resolved
	retries  int
	attempts map[int]int // by turn
}

func newSchemaCheck(raw json.RawMessage, retries int) (*schemaCheck, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("not a JSON Schema: %v", err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, err
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, err
	}
	return &schemaCheck{raw: compact.Bytes(), resolved: rs, retries: retries, attempts: map[int]int{}}, nil
}

func (s *schemaCheck) instructions() string {
	return "Structured output: your final answer (the message you end the turn with, after any tool use) must be one JSON value, " +
		"and nothing else, that conforms to this JSON Schema:\n" + string(s.raw)
}

// check parses and validates a final answer.
func (s *schemaCheck) check(answer string) (json.RawMessage, error) {
	text := strings.TrimSpace(answer)
	if text == "" {
		return nil, fmt.Errorf("the answer is empty")
	}
	if body, ok := fenced(text); ok {
		text = body
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("the answer is not JSON: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("the answer has text after the JSON value")
	}
	var plain any
	_ = json.Unmarshal([]byte(text), &plain)
	if err := s.resolved.Validate(plain); err != nil {
		return nil, fmt.Errorf("the answer does not conform to the schema: %v", err)
	}
	var out bytes.Buffer
	_ = json.Compact(&out, []byte(text))
	return out.Bytes(), nil
}

// fenced returns the body of a Markdown code fence that is the whole text.
func fenced(text string) (string, bool) {
	if !strings.HasPrefix(text, "```") || !strings.HasSuffix(text, "```") || len(text) < 6 {
		return "", false
	}
	body := strings.TrimSuffix(strings.TrimPrefix(text, "```"), "```")
	if i := strings.IndexByte(body, '\n'); i >= 0 && !strings.ContainsAny(body[:i], "{[\"") {
		body = body[i+1:]
	}
	return strings.TrimSpace(body), true
}

// continuation checks the main agent's final answer against the schema
// when the turn is about to end, and sends the model back with the
// problem when it does not conform.
func (r *run) continuation(ctx context.Context, in agent.ContinuationInput, next kernel.Next[agent.ContinuationInput, agent.ContinuationDecision]) (agent.ContinuationDecision, error) {
	d, err := next(ctx, in)
	if err != nil || d.Continue || !r.mine(in.Agent) {
		return d, err
	}
	r.mu.Lock()
	sc := r.schema
	r.mu.Unlock()
	if sc == nil {
		return d, nil
	}
	answer := lastAnswer(in.Agent.Session())
	value, problem := sc.check(answer)
	r.mu.Lock()
	defer r.mu.Unlock()
	if problem == nil {
		if r.stats != nil {
			r.stats.structured = value
		}
		return d, nil
	}
	sc.attempts[in.Turn]++
	if sc.attempts[in.Turn] > sc.retries {
		if r.stats != nil {
			r.stats.schemaFail = fmt.Sprintf("the final answer did not conform to the JSON Schema after %d retries: %v", sc.retries, problem)
		}
		return d, nil
	}
	text := fmt.Sprintf("Your answer cannot be used: %v. Reply again with only one JSON value that conforms to this JSON Schema, without Markdown or other text:\n%s", problem, sc.raw)
	return agent.ContinuationDecision{Continue: true, Reason: &tool.Context{Content: []llm.Block{llm.Text(text)}, Source: llm.PluginSource("json-schema")}}, nil
}

// lastAnswer is the text of the session's last assistant message.
func lastAnswer(s *session.Session) string {
	e, ok := s.Last(session.TypeAssistantMessage)
	if !ok {
		return ""
	}
	am, err := session.Decode[session.AssistantMessage](e)
	if err != nil {
		return ""
	}
	return llm.TextOf(am.Content)
}

// systemOverride is the system prompt the SDK's initialize asked for.
type systemOverride struct {
	replace *string
	append  string
}

// request applies the run's per-session settings to the main agent's
// requests: the model set_model chose, the SDK's system prompt, the
// structured-output instructions.
func (r *run) request(ctx context.Context, in agent.RequestInput, next kernel.Next[agent.RequestInput, *llm.Request]) (*llm.Request, error) {
	if in.Request != nil && r.mine(in.Agent) {
		r.mu.Lock()
		model, sys, sc := r.model, r.system, r.schema
		r.mu.Unlock()
		if model != "" {
			in.Request.Model = model
		}
		if sys.replace != nil {
			in.Request.System = join(*sys.replace, in.Agent.Options().SystemPrompt)
		}
		if sys.append != "" {
			in.Request.System = join(in.Request.System, sys.append)
		}
		if sc != nil {
			in.Request.System = join(in.Request.System, sc.instructions())
		}
	}
	return next(ctx, in)
}

func join(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n\n" + b
}
