package hooks_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/bash/local"
	"github.com/dshq/dsh/hooks"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

type noopTool struct{}

func (noopTool) Info() tool.Info {
	return tool.Info{Name: "bash", Parameters: []byte(`{"type":"object"}`)}
}
func (noopTool) Run(context.Context, tool.Call) (tool.Result, error) {
	return tool.TextResult("ok"), nil
}

// BenchmarkHookOverhead measures a tool call through the registry with 0,
// 1 and 10 matching command hooks (`true`); the hooks of one event run
// concurrently.
func BenchmarkHookOverhead(b *testing.B) {
	for _, n := range []int{0, 1, 10} {
		b.Run(fmt.Sprintf("hooks=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			var hs []string
			for i := range n {
				hs = append(hs, fmt.Sprintf(`{"type":"command","command":"true #%d"}`, i))
			}
			file := filepath.Join(dir, "settings.json")
			os.WriteFile(file, []byte(`{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[`+strings.Join(hs, ",")+`]}]}}`), 0o644)
			exec, err := local.New(local.Config{})
			if err != nil {
				b.Fatal(err)
			}
			defer exec.Close()
			conf := hooks.Load(hooks.Claude, []string{file}, nil)
			reg := tool.NewRegistry()
			reg.Register(noopTool{})
			scope := kernel.NewScope("bench")
			defer scope.Close()
			br := hooks.New(hooks.Options{Dialect: hooks.Claude, Config: func(string) *hooks.Config { return &conf }, Runner: hooks.Runner{Exec: exec}}, agent.NewRegistry())
			if err := br.Install(scope, reg, session.NewLive(nil), nil); err != nil {
				b.Fatal(err)
			}
			call := tool.NewCall("c", "bash", `{"command":"echo hi"}`, nil)
			b.ResetTimer()
			for range b.N {
				if out := reg.Execute(context.Background(), call, tool.ExecOptions{}); out.Result.IsError {
					b.Fatal(llmText(out))
				}
			}
		})
	}
}

func llmText(o tool.Outcome) string { return fmt.Sprint(o.Result.Content) }
