package term

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/mcp"
)

// fakeResources answers ReadResource from a map (the real server's side
// is mcp's TestResourcesFromNodeServer and cli's tmux test).
type fakeResources map[string][]mcp.ResourceContent

func (f fakeResources) ReadResource(_ context.Context, server, uri string) ([]mcp.ResourceContent, error) {
	if c, ok := f[server+":"+uri]; ok {
		return c, nil
	}
	return nil, errors.New("no resource " + uri)
}

func TestMentionedResources(t *testing.T) {
	isServer := func(s string) bool { return s == "notes" }
	got := mentionedResources(`see @notes:a://b, @other:x://y, me@notes:c://d and @notes:a://b again; @notes: @"notes:q://r s"`, t.TempDir(), isServer)
	if len(got) != 2 || got[0] != (resourceRef{"notes", "a://b"}) || got[1] != (resourceRef{"notes", "q://r s"}) {
		t.Fatalf("refs %+v", got)
	}
}

// A text resource is attached within the cap, an image as an image block
// (and refuses the message for a text-only model), other binary content
// is named and sized, and a failed read is a warning.
func TestAttachResources(t *testing.T) {
	pixel := pngBytes(t)
	rr := fakeResources{
		"notes:t://plan": {{URI: "t://plan", MIMEType: "text/plain", Text: "line one\nline two\n"}},
		"notes:t://big":  {{URI: "t://big", Text: strings.Repeat("é", maxResourceChars+10)}},
		"notes:i://px":   {{URI: "i://px", MIMEType: "image/png", Blob: pixel}},
		"notes:b://fw":   {{URI: "b://fw", MIMEType: "application/octet-stream", Blob: []byte{0, 1, 2, 255}}},
	}
	refs := []resourceRef{{"notes", "t://plan"}, {"notes", "t://big"}, {"notes", "i://px"}, {"notes", "b://fw"}, {"notes", "t://gone"}}
	blocks, warnings, err := attachResources(context.Background(), rr, refs, imagePolicy{accept: true, model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "@notes:t://gone not attached: no resource t://gone") {
		t.Errorf("warnings %q", warnings)
	}
	if len(blocks) != 5 {
		t.Fatalf("%d blocks: %+v", len(blocks), blocks)
	}
	if n, _ := mentionNote(blocks[0].Text); n != "attached @notes:t://plan (2 lines)" || !strings.Contains(blocks[0].Text, "line one\nline two\n</mention>") {
		t.Errorf("text block %q (note %q)", blocks[0].Text, n)
	}
	if c := strings.Count(blocks[1].Text, "é"); c != maxResourceChars || !strings.Contains(blocks[1].Text, "[cut: the first 100000 of 100010 characters are shown]") {
		t.Errorf("the big resource holds %d characters", c)
	}
	if blocks[3].Type != llm.BlockImage || blocks[3].MimeType != "image/png" || !strings.HasPrefix(blocks[3].URL, "data:image/png;base64,") {
		t.Errorf("image block %+v", blocks[3])
	}
	if n, _ := mentionNote(blocks[4].Text); n != "attached @notes:b://fw (binary octet-stream, 4 B)" && n != "attached @notes:b://fw (binary application/octet-stream, 4 B)" {
		t.Errorf("binary note %q", n)
	}
	_, _, err = attachResources(context.Background(), rr, refs[2:3], imagePolicy{accept: false, model: "text-only"})
	var r *refusal
	if !errors.As(err, &r) || !strings.Contains(err.Error(), "text-only does not read images (@notes:i://px is image/png)") {
		t.Errorf("an image resource for a text-only model: %v", err)
	}
}
