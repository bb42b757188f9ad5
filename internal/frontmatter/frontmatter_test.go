package frontmatter

import (
	"slices"
	"strings"
	"testing"
)

func TestParseFlat(t *testing.T) {
	d, err := Parse("---\r\ndescription: Create a git commit: staged only\r\nargument-hint: [message]\r\nallowed-tools: Bash(git add:*), Bash(git status:*), Read\r\nmodel: \"claude-3-5-haiku\"\r\n# a comment\r\n---\r\nCommit $ARGUMENTS\r\n")
	if err != nil {
		t.Fatal(err)
	}
	if !d.Has || d.Body != "Commit $ARGUMENTS\n" {
		t.Fatalf("body %q has %v", d.Body, d.Has)
	}
	if got := d.String("description"); got != "Create a git commit: staged only" {
		t.Fatalf("description %q", got)
	}
	if got := d.Text("argument-hint"); got != "[message]" {
		t.Fatalf("argument-hint %q", got)
	}
	tools, ok := d.List("allowed-tools")
	if !ok || !slices.Equal(tools, []string{"Bash(git add:*)", "Bash(git status:*)", "Read"}) {
		t.Fatalf("allowed-tools %q", tools)
	}
	if d.String("model") != "claude-3-5-haiku" {
		t.Fatalf("model %q", d.String("model"))
	}
}

func TestParseBlockListAndYAMLFallback(t *testing.T) {
	d, err := Parse("---\nname: pdf\ndescription: >\n  Extract text from PDFs.\n  Use for forms.\nallowed-tools:\n  - Read\n  - Bash(python3 scripts/*:*)\nmetadata:\n  version: 2\n---\nbody")
	if err != nil {
		t.Fatal(err)
	}
	if d.String("description") != "Extract text from PDFs. Use for forms.\n" {
		t.Fatalf("folded description %q", d.String("description"))
	}
	tools, _ := d.List("allowed-tools")
	if !slices.Equal(tools, []string{"Read", "Bash(python3 scripts/*:*)"}) {
		t.Fatalf("tools %q", tools)
	}
	if d.Body != "body" {
		t.Fatalf("body %q", d.Body)
	}
	// The scanner alone reads a block list.
	d, err = Parse("---\ntools:\n- Read\n- Grep\n---\n")
	if err != nil {
		t.Fatal(err)
	}
	if tools, _ := d.List("tools"); !slices.Equal(tools, []string{"Read", "Grep"}) {
		t.Fatalf("tools %q", tools)
	}
}

func TestParseErrorsAndNoFrontMatter(t *testing.T) {
	if _, err := Parse("---\nname: x\nno end"); err == nil || !strings.Contains(err.Error(), "not closed") {
		t.Fatalf("unclosed: %v", err)
	}
	if _, err := Parse("---\nname: [x\n  bad: {\n---\n"); err == nil || !strings.Contains(err.Error(), "YAML") {
		t.Fatalf("bad YAML: %v", err)
	}
	d, err := Parse("# Title\n\n---\nnot front matter\n")
	if err != nil || d.Has || !strings.HasPrefix(d.Body, "# Title") {
		t.Fatalf("%+v %v", d, err)
	}
	if _, present := d.List("allowed-tools"); present {
		t.Fatal("absent key reported present")
	}
}

func BenchmarkParseFlat(b *testing.B) {
	text := "---\ndescription: Review the staged diff for bugs and style\nargument-hint: [focus]\nallowed-tools: Bash(git diff:*), Read, Grep\n---\nReview $ARGUMENTS\n"
	for b.Loop() {
		if _, err := Parse(text); err != nil {
			b.Fatal(err)
		}
	}
}
