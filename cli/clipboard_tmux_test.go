package cli

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Ctrl-V through the real binary: a fake xclip first on PATH (DISPLAY
// set) prints a real PNG; the editor shows [Image #1], and the message
// reaches a model that reads images with an image part holding the PNG's
// bytes and media type. An empty clipboard is said, and a text-only model
// is refused the message, which comes back to the editor with its image.
func TestClipboardImagePasteInTmux(t *testing.T) {
	f := newTermFixture(t, `[{"id":"m"},{"id":"text","images":false}]`, chatText("A red pixel.", 10, 1))
	img := pngFile(t)
	bin := t.TempDir()
	pngPath := filepath.Join(bin, "clip.png")
	empty := filepath.Join(bin, "empty")
	f.write(t, pngPath, string(img))
	f.write(t, filepath.Join(bin, "xclip"), "#!/bin/sh\n"+
		`[ "$*" = "-selection clipboard -t image/png -o" ] || { echo "unexpected arguments: $*" >&2; exit 2; }`+"\n"+
		`[ -e `+empty+` ] && { echo "Error: target image/png not available" >&2; exit 1; }`+"\n"+
		"cat "+pngPath+"\n")
	if err := os.Chmod(filepath.Join(bin, "xclip"), 0o755); err != nil {
		t.Fatal(err)
	}
	tt := startTmuxEnv(t, f.bin, f.dir, f.home, []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "DISPLAY=:77", "WAYLAND_DISPLAY="}, "--model", "local/m", "--trust")
	tt.waitFor("local/m", "›")

	tt.text("what is in ")
	tt.keys("C-v")
	tt.waitUntil(func(s string) bool { return strings.Contains(lastLines(s, 3), "› what is in [Image #1]") }, "the image's placeholder")
	tt.text(" please")
	tt.keys("Enter")
	s := tt.waitFor("A red pixel.")
	if !strings.Contains(s, "attached [Image #1] (png, ") {
		t.Fatalf("no attachment note:\n%s", s)
	}
	want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(img)
	var found bool
	var text string
	msgs, _ := f.model.request(0)["messages"].([]any)
	last, _ := msgs[len(msgs)-1].(map[string]any)
	parts, _ := last["content"].([]any)
	for _, p := range parts {
		p, _ := p.(map[string]any)
		switch p["type"] {
		case "image_url":
			u, _ := p["image_url"].(map[string]any)
			found = found || u["url"] == want
		case "text":
			if s, _ := p["text"].(string); text == "" {
				text = s
			}
		}
	}
	if !found {
		t.Fatalf("the request has no image part with the clipboard's PNG: %.600s", f.model.lastMessages())
	}
	if text != "what is in [Image #1] please" {
		t.Errorf("the message's text is %q", text)
	}

	// Nothing in the clipboard: said, and nothing is inserted.
	f.write(t, empty, "")
	tt.keys("C-v")
	s = tt.waitFor("no image in the clipboard (xclip: Error: target image/png not available)")
	if strings.Contains(lastLines(s, 3), "[Image #") {
		t.Fatalf("a placeholder without an image:\n%s", lastLines(s, 3))
	}
	if err := os.Remove(empty); err != nil {
		t.Fatal(err)
	}

	f.refusedByTextModel(t, tt, func() {
		tt.keys("C-v")
		tt.waitUntil(func(s string) bool { return strings.Contains(lastLines(s, 3), "› [Image #1]") }, "the image's placeholder")
		tt.text(" again")
	}, "not sent: local/text does not read images ([Image #1])", "› [Image #1] again")
}
