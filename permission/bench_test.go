package permission

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dshq/dsh/bash/analysis"
)

// benchRules is a realistic large settings file: 50 rules, most of them
// Bash prefixes, with deny and ask rules that every command is checked
// against before the allow rules.
func benchRules() []Rule {
	var rs []Rule
	tools := []string{"git status", "git diff", "git log", "git show", "ls", "cat", "grep", "rg", "wc", "head",
		"tail", "find", "go test", "go vet", "go build", "npm run lint", "npm run test", "make build", "make test", "jq",
		"sort", "uniq", "cut", "tr", "sed -n", "awk", "diff", "stat", "file", "du",
		"docker ps", "kubectl get", "cargo test", "cargo build", "pytest", "ruff check", "mypy", "tsc --noEmit", "eslint", "prettier --check"}
	for _, t := range tools {
		rs = append(rs, Rule{Text: "Bash(" + t + ":*)", Behavior: Allow, Source: userSettings})
	}
	for _, t := range []string{"Bash(rm:*)", "Bash(git push:*)", "Bash(curl:*)", "Read(~/.ssh/**)", "Edit(.env)"} {
		rs = append(rs, Rule{Text: t, Behavior: Deny, Source: "/p/.dsh/settings.json"})
	}
	for _, t := range []string{"Bash(git commit:*)", "Bash(npm publish:*)", "Edit(docs/**)", "WebFetch(domain:example.com)", "mcp__github"} {
		rs = append(rs, Rule{Text: t, Behavior: Ask, Source: userSettings})
	}
	return rs
}

// benchLine is 20 simple commands joined by every operator kind, all
// allowed, so each is checked against every deny and ask rule and then
// searched for among the allow rules.
var benchLine = strings.Join([]string{
	"git status --short", "git diff --stat HEAD~3", "git log --oneline -n 20", "ls -la src | wc -l",
	"cat go.mod", "grep -rn TODO src | sort", "rg --files | tail -3", "find . -name '*.go'",
	"go vet ./...", "go test ./... -run TestX", "npm run lint", "make build", "jq .name package.json",
	"sed -n 1,10p README.md",
}, " && ") + "; (cut -d: -f1 go.sum) || echo $(git show HEAD --stat)"

func BenchmarkDecide(b *testing.B) {
	e := newEnv(b)
	c := mustNew(b, Config{Rules: benchRules(), Home: e.home, Cwd: e.root})
	ctx := context.Background()
	line := bashCall(benchLine)
	if n := len(analysis.Analyze(benchLine, e.home).Commands); n != 20 {
		b.Fatalf("bench line has %d simple commands, want 20", n)
	}
	if d := c.Decide(ctx, line, e.root); d.Behavior != Allow {
		b.Fatalf("bench line: %s (%s)", d.Behavior, d.Reason)
	}
	b.Run(fmt.Sprintf("bash/%drules/20cmds", len(benchRules())), func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c.Decide(ctx, line, e.root)
		}
	})
	one := bashCall("git status --short")
	b.Run("bash/1cmd", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c.Decide(ctx, one, e.root)
		}
	})
	read := call("read", map[string]string{"file_path": "src/main.go"})
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c.Decide(ctx, read, e.root)
		}
	})
}
