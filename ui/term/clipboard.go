package term

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/dshq/dsh/llm"
)

// Clipboard images: ctrl-v reads an image from the system clipboard with
// the platform's tool — wl-paste on Wayland, xclip on X11, pngpaste on
// macOS (a terminal passes pasted text, never image data, so dsh asks the
// clipboard itself) — and the editor shows it as [Image #n]. When the
// message is sent the image follows its text as an image block, or, for
// a text-only model, the message is refused as for an @-mentioned image.
// No tool, no display, or no image in the clipboard is said in the
// transcript.

// clipTool is how to read a PNG from the clipboard here.
type clipTool struct {
	name string
	args []string
	// install says where the tool comes from, for the message when it is
	// missing.
	install string
}

// clipboardTool picks the tool for the session dsh runs in: Wayland
// first (WAYLAND_DISPLAY), then X11 (DISPLAY), then macOS.
func clipboardTool(env func(string) string, goos string) (clipTool, error) {
	switch {
	case env("WAYLAND_DISPLAY") != "":
		return clipTool{"wl-paste", []string{"--no-newline", "--type", "image/png"}, "the wl-clipboard package"}, nil
	case env("DISPLAY") != "":
		return clipTool{"xclip", []string{"-selection", "clipboard", "-t", "image/png", "-o"}, "the xclip package"}, nil
	case goos == "darwin":
		return clipTool{"pngpaste", []string{"-"}, "brew install pngpaste"}, nil
	}
	return clipTool{}, errors.New("no clipboard to read an image from here (neither WAYLAND_DISPLAY nor DISPLAY is set; over ssh, attach the image by @path or paste its path)")
}

// maxClipWait bounds the clipboard tool (a clipboard owner that does not
// answer would otherwise hold the paste forever).
const maxClipWait = 5 * time.Second

// clipboardImage reads an image from the clipboard: its bytes and media
// type, or an error that says why there is none.
func clipboardImage(ctx context.Context, env func(string) string) ([]byte, string, error) {
	t, err := clipboardTool(env, runtime.GOOS)
	if err != nil {
		return nil, "", err
	}
	path, err := exec.LookPath(t.name)
	if err != nil {
		return nil, "", fmt.Errorf("cannot read the clipboard: %s is not installed (%s)", t.name, t.install)
	}
	ctx, cancel := context.WithTimeout(ctx, maxClipWait)
	defer cancel()
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, t.args...)
	cmd.Stdout, cmd.Stderr = &limitWriter{w: &out, n: maxImageBytes + 1}, &limitWriter{w: &stderr, n: 4096}
	err = cmd.Run()
	why := strings.TrimSpace(stderr.String())
	if i := strings.IndexByte(why, '\n'); i >= 0 {
		why = why[:i]
	}
	switch {
	case ctx.Err() != nil:
		return nil, "", fmt.Errorf("%s did not answer within %s", t.name, maxClipWait)
	case err != nil || out.Len() == 0:
		if why == "" && err != nil {
			why = err.Error()
		}
		if why != "" {
			why = " (" + t.name + ": " + why + ")"
		}
		return nil, "", fmt.Errorf("no image in the clipboard%s", why)
	case out.Len() > maxImageBytes:
		return nil, "", fmt.Errorf("the clipboard's image is more than the %s a model accepts", fmtBytes(maxImageBytes))
	}
	mime := http.DetectContentType(out.Bytes())
	if !imageTypes[mime] {
		return nil, "", fmt.Errorf("no image in the clipboard (%s gave %s)", t.name, mime)
	}
	return out.Bytes(), mime, nil
}

// limitWriter keeps the first n bytes and counts one more, so a caller
// sees that the output was longer.
type limitWriter struct {
	w *bytes.Buffer
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if room := l.n - l.w.Len(); room > 0 {
		l.w.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// clipRead is the clipboard's answer to a ctrl-v.
type clipRead struct {
	data []byte
	mime string
	err  error
}

// pasteClipboard reads the clipboard off the UI goroutine.
func (u *ui) pasteClipboard() {
	u.setHint("reading the clipboard…", maxClipWait)
	env := u.o.Env
	go func() {
		data, mime, err := clipboardImage(u.ctx, env)
		u.q.push(clipRead{data: data, mime: mime, err: err})
	}()
}

// clipboardRead puts the image in the editor, or says why there is none.
func (u *ui) clipboardRead(m clipRead) {
	u.setHint("", 0)
	if m.err != nil {
		u.tr.Note(u.st.Warn(sanitize(m.err.Error())))
		return
	}
	u.ed.AddImage(m.mime, m.data)
}

// imageParts are the blocks of the images pasted into a message, or a
// refusal when the model reads no images.
func imageParts(imgs []clipImage, images imagePolicy) ([]llm.Block, error) {
	if len(imgs) == 0 {
		return nil, nil
	}
	if !images.accept {
		names := make([]string, len(imgs))
		for i, im := range imgs {
			names[i] = im.name
		}
		return nil, &refusal{fmt.Sprintf("not sent: %s does not read images (%s); switch with /model, or remove the image and send again",
			images.model, strings.Join(names, ", "))}
	}
	var out []llm.Block
	for _, im := range imgs {
		out = append(out, imageBlocks(im.name, im.mime, im.data)...)
	}
	return out, nil
}
