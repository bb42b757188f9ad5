package term

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/providers"
	"github.com/dshq/dsh/tool"
)

// Images: an @path naming a PNG, JPEG, GIF or WebP file (a dragged or
// pasted path becomes such a mention) is attached as an image block when
// the model reads images. For a text-only model the message is not sent:
// the user is told why and gets the message back in the editor, so nothing
// typed is lost and the model never sees a placeholder it cannot use.

// maxImageBytes is the largest image attached: 5 MiB once base64-encoded,
// the most the Anthropic API accepts per image.
const maxImageBytes = 5 << 20 / 4 * 3

// imageTypes are the formats both provider families accept.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// imageType sniffs the file at abs: its media type when it is an image a
// model can read.
func imageType(abs string) (string, bool) {
	f, err := os.Open(abs)
	if err != nil {
		return "", false
	}
	defer f.Close()
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	mt := http.DetectContentType(head[:n])
	return mt, imageTypes[mt]
}

// imagePolicy is what the current model does with images.
type imagePolicy struct {
	accept bool
	model  string
}

// imagePolicy is what the model in use does with images.
func (u *ui) imagePolicy() imagePolicy {
	m := u.modelName()
	if u.app.Config == nil {
		return imagePolicy{model: m}
	}
	return imagePolicy{accept: providers.AcceptsImages(providers.FromSettings(u.app.Config), m), model: m}
}

// refusal is a message that cannot be sent as written.
type refusal struct{ reason string }

func (r *refusal) Error() string { return r.reason }

// attachImage reads the image p (absolute abs) for the message: the read
// tool's permission decision applies (hooks, rules, and a question when it
// asks), as for any mentioned file. The text block before the image names
// it, for the model and for the transcript's note.
func attachImage(ctx context.Context, reg *tool.Registry, host tool.Host, ap tool.Approver, n int, p, abs, mime string, size int64) ([]llm.Block, string) {
	if size > maxImageBytes {
		return nil, fmt.Sprintf("@%s not attached: the image is %s, more than the %s a model accepts", p, fmtBytes(size), fmtBytes(maxImageBytes))
	}
	args, _ := json.Marshal(map[string]string{"file_path": abs})
	pend := reg.Prepare(ctx, tool.Call{ID: llm.CallID(fmt.Sprintf("mention-%d", n)), Name: "read", Args: args, Raw: string(args), Host: host}, tool.ExecOptions{Approver: ap})
	switch pend.Decision.Kind {
	case tool.Deny:
		return nil, fmt.Sprintf("@%s not attached: %s", p, pend.Decision.Reason)
	case tool.Ask:
		var info tool.Info
		if t, ok := reg.Get("read"); ok {
			info = t.Info()
		}
		reason := pend.Decision.Reason
		if reason == "" {
			reason = "reading " + p + " requires approval"
		}
		a, err := ap.Approve(ctx, tool.ApprovalRequest{Call: pend.Call, Info: info, Reason: reason, Suggestions: pend.Decision.Suggestions})
		if err != nil {
			return nil, fmt.Sprintf("@%s not attached: %v", p, err)
		}
		if !a.Allow {
			return nil, fmt.Sprintf("@%s not attached: %s", p, tool.DenialText(a))
		}
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return nil, fmt.Sprintf("@%s not attached: %v", p, err)
	}
	if len(data) > maxImageBytes { // grew since the stat
		return nil, fmt.Sprintf("@%s not attached: the image is %s, more than the %s a model accepts", p, fmtBytes(int64(len(data))), fmtBytes(maxImageBytes))
	}
	return imageBlocks(p, mime, data), ""
}

// imageBlocks are an attached image: a text block naming it (what the
// transcript shows as a note) and the image itself.
func imageBlocks(name, mime string, data []byte) []llm.Block {
	head := fmt.Sprintf("%s%q kind=\"image\" type=%q bytes=\"%d\">\nThe user attached the image %s; it follows.\n</mention>", mentionTag, name, mime, len(data), name)
	return []llm.Block{
		llm.Text(head),
		{Type: llm.BlockImage, URL: "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data), MimeType: mime},
	}
}

// imageNote is the transcript's line for an image attachment's header.
func imageNote(p, head string) string {
	var mime string
	var size int64
	if _, attr, ok := strings.Cut(head, ` type="`); ok {
		mime, _, _ = strings.Cut(attr, `"`)
	}
	if _, attr, ok := strings.Cut(head, ` bytes="`); ok {
		_, _ = fmt.Sscanf(attr, "%d", &size)
	}
	if strings.HasPrefix(p, "[Image #") { // pasted from the clipboard
		return fmt.Sprintf("attached %s (%s, %s)", p, strings.TrimPrefix(mime, "image/"), fmtBytes(size))
	}
	return fmt.Sprintf("attached @%s (%s, %s)", p, strings.TrimPrefix(mime, "image/"), fmtBytes(size))
}

// fmtBytes is a size for people: 68 B, 12.3 KB, 4.1 MB.
func fmtBytes(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1f KB", float64(n)/1e3)
	default:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
}

// pastedImage is the path a paste holds when it is exactly one existing
// image file (how terminals deliver a file dragged onto them): quoted,
// with backslash-escaped spaces, or as a file:// URL. It is returned
// relative to dir when inside it.
func pastedImage(text, dir string) (string, bool) {
	s := strings.TrimSpace(text)
	if s == "" || strings.ContainsAny(s, "\n\r") {
		return "", false
	}
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		s = s[1 : len(s)-1]
	} else {
		s = strings.ReplaceAll(s, `\ `, " ")
	}
	s = strings.TrimPrefix(s, "file://")
	if strings.HasPrefix(s, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			s = filepath.Join(home, s[2:])
		}
	}
	abs := s
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(dir, s)
	}
	st, err := os.Stat(abs)
	if err != nil || !st.Mode().IsRegular() {
		return "", false
	}
	if _, ok := imageType(abs); !ok {
		return "", false
	}
	if rel, err := filepath.Rel(dir, abs); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel), true
	}
	return abs, true
}
