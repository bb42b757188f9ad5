package term

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
)

// pngBytes is a real 2×2 PNG.
func pngBytes(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(1, 1, color.RGBA{R: 255, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// An @-mentioned image reaches a model that reads images as an image
// block (the transcript shows a note, not the bytes); a model that does
// not is refused the message, which comes back to the editor unsent.
func TestMentionedImage(t *testing.T) {
	ad := scripted.New(scripted.Text("a red pixel"))
	h := startUI(t, func(a *app.App) {
		useScript(t, ad)(a)
		// The deepseek provider reads no images.
		if _, err := a.Host.LLM.Register([]llm.ModelInfo{{ID: "deepseek/fake", ContextWindow: 10000}}, ad); err != nil {
			t.Fatal(err)
		}
	})
	data := pngBytes(t)
	if err := os.WriteFile(filepath.Join(h.cwd, "shot.png"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	h.send("/model script/m\r")
	h.wait("model set to script/m")
	h.send("what is in @shot.png\r")
	h.wait("a red pixel", "attached @shot.png (png, ")
	reqs := ad.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	last := reqs[0].Messages[len(reqs[0].Messages)-1]
	var img *llm.Block
	for i, b := range last.Content {
		if b.Type == llm.BlockImage {
			img = &last.Content[i]
		}
	}
	want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(data)
	if img == nil || img.URL != want || img.MimeType != "image/png" {
		t.Fatalf("no image block with the file's bytes in %+v", last.Content)
	}
	if !strings.Contains(llm.TextOf(last.Content), "what is in @shot.png") {
		t.Fatalf("the typed text is missing: %q", llm.TextOf(last.Content))
	}
	if strings.Contains(h.screen(), base64.StdEncoding.EncodeToString(data)[:16]) {
		t.Fatal("the transcript shows the image's bytes")
	}

	h.send("/model deepseek/fake\r")
	h.wait("model set to deepseek/fake")
	h.send("and now @shot.png?\r")
	h.wait("not sent: deepseek/fake does not read images (@shot.png)")
	h.wait("› and now @shot.png?") // back in the editor
	if n := len(ad.Requests()); n != 1 {
		t.Fatalf("%d requests: the refused message was sent", n)
	}
	h.send("\x15") // ctrl-u: the editor empty again
	h.exit()
}

// A pasted path to an image (a file dragged onto the terminal) becomes a
// mention; other pastes stay as they are.
func TestPastedImagePath(t *testing.T) {
	dir := t.TempDir()
	data := pngBytes(t)
	for _, f := range []string{"my shot.png", "sub/a.png"} {
		p := filepath.Join(dir, f)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.png"), []byte("not an image"), 0o600); err != nil {
		t.Fatal(err)
	}
	for paste, want := range map[string]string{
		filepath.Join(dir, "my shot.png"):                                "my shot.png",
		"'" + filepath.Join(dir, "my shot.png") + "'":                    "my shot.png",
		strings.ReplaceAll(filepath.Join(dir, "my shot.png"), " ", `\ `): "my shot.png",
		"file://" + filepath.Join(dir, "sub/a.png") + "\n":               "sub/a.png",
		"sub/a.png":       "sub/a.png",
		"notes.png":       "",
		"sub/a.png\nmore": "",
		"sub":             "",
	} {
		got, ok := pastedImage(paste, dir)
		if ok != (want != "") || got != want {
			t.Errorf("pastedImage(%q) = %q, %v; want %q", paste, got, ok, want)
		}
	}
}
