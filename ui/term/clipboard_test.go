package term

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeTool puts an executable script called name first on PATH.
func fakeTool(t *testing.T, name, script string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func envOf(kv ...string) func(string) string {
	return func(k string) string {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == k {
				return kv[i+1]
			}
		}
		return ""
	}
}

// The clipboard tool follows the display (Wayland before X11, pngpaste on
// macOS), its PNG is read whole, and each way of having no image says
// why: no display, the tool missing, the tool refusing, not an image.
func TestClipboardImage(t *testing.T) {
	png := pngBytes(t)
	pngPath := filepath.Join(t.TempDir(), "clip.png")
	if err := os.WriteFile(pngPath, png, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	fakeTool(t, "xclip", `[ "$*" = "-selection clipboard -t image/png -o" ] || { echo "bad args: $*" >&2; exit 2; }; cat `+pngPath+"\n")
	data, mime, err := clipboardImage(ctx, envOf("DISPLAY", ":0"))
	if err != nil || mime != "image/png" || !bytes.Equal(data, png) {
		t.Fatalf("xclip: %v %q %d bytes", err, mime, len(data))
	}
	// Wayland wins when both are set; wl-paste is not installed here.
	if _, _, err := clipboardImage(ctx, envOf("DISPLAY", ":0", "WAYLAND_DISPLAY", "wayland-0")); err == nil || !strings.Contains(err.Error(), "wl-paste is not installed (the wl-clipboard package)") {
		t.Fatalf("no wl-paste: %v", err)
	}
	if _, _, err := clipboardImage(ctx, envOf()); err == nil || !strings.Contains(err.Error(), "neither WAYLAND_DISPLAY nor DISPLAY") {
		t.Fatalf("no display: %v", err)
	}
	if tl, err := clipboardTool(envOf(), "darwin"); err != nil || tl.name != "pngpaste" {
		t.Fatalf("macOS: %+v %v", tl, err)
	}

	fakeTool(t, "wl-paste", "echo 'Nothing is copied' >&2; exit 1\n")
	if _, _, err := clipboardImage(ctx, envOf("WAYLAND_DISPLAY", "wayland-0")); err == nil || err.Error() != "no image in the clipboard (wl-paste: Nothing is copied)" {
		t.Fatalf("empty clipboard: %v", err)
	}
	fakeTool(t, "wl-paste", "echo just some text\n")
	if _, _, err := clipboardImage(ctx, envOf("WAYLAND_DISPLAY", "wayland-0")); err == nil || !strings.Contains(err.Error(), "no image in the clipboard (wl-paste gave text/plain") {
		t.Fatalf("text in the clipboard: %v", err)
	}
}

// Pasted images become [Image #n] placeholders; one deleted from the
// buffer is not sent; a text-only model refuses them.
func TestPastedImages(t *testing.T) {
	e := NewEditor(nil)
	e.Handle(Key{Kind: KeyPaste, Text: "see "})
	e.AddImage("image/png", []byte("one"))
	e.Handle(Key{Kind: KeyRune, Rune: ' '})
	e.AddImage("image/png", []byte("two"))
	if e.Text() != "see [Image #1] [Image #2]" {
		t.Fatalf("buffer %q", e.Text())
	}
	for range len("[Image #2]") {
		e.Handle(Key{Kind: KeyBackspace})
	}
	imgs := e.Images()
	if len(imgs) != 1 || string(imgs[0].data) != "one" {
		t.Fatalf("images %+v", imgs)
	}
	blocks, err := imageParts(imgs, imagePolicy{accept: true})
	if err != nil || len(blocks) != 2 || blocks[1].MimeType != "image/png" {
		t.Fatalf("blocks %+v %v", blocks, err)
	}
	if n, _ := mentionNote(blocks[0].Text); n != "attached [Image #1] (png, 3 B)" {
		t.Errorf("note %q", n)
	}
	if _, err := imageParts(imgs, imagePolicy{model: "local/text"}); err == nil || !strings.Contains(err.Error(), "not sent: local/text does not read images ([Image #1])") {
		t.Errorf("text-only: %v", err)
	}
	e.Reset()
	if len(e.Images()) != 0 {
		t.Error("reset keeps the images")
	}
}
