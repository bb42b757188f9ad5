package term

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/mcp"
)

// MCP resources at @: the resources of the connected MCP servers that
// offer them are suggested beside the files as @server:uri (Claude Code's
// notation). A sent message's @server:uri mentions are read from the
// server and attached after its text as a file's content is: text within
// a size cap, an image as an image block (refused for a text-only model,
// as an image file is), other binary content named and sized, not
// inlined. A server whose listing fails is said in the transcript once;
// the files are still suggested.

// maxResourceChars bounds the text one mentioned resource attaches (the
// MCP tools' result cap).
const maxResourceChars = mcp.DefaultMaxResultChars

// resourceToken is how a resource is written after @.
func resourceToken(r mcp.Resource) string { return r.Server + ":" + r.URI }

// resourcesListed are the resources of the connected servers, listed off
// the UI goroutine.
type resourcesListed struct {
	res  []mcp.Resource
	errs []error
}

// mcpChanged: a server's state or tools changed (one may have connected);
// the resources are listed again on the next @.
type mcpChanged struct{}

// listResources starts a listing unless one runs or the last is fresh.
func (u *ui) listResources() {
	m := u.app.MCP
	if m == nil || u.resListing || !u.resStale {
		return
	}
	u.resListing, u.resStale = true, false
	go func() {
		ctx, cancel := context.WithTimeout(u.ctx, 30*time.Second)
		defer cancel()
		res, errs := m.Resources(ctx)
		u.q.push(resourcesListed{res: res, errs: errs})
	}()
}

// resourcesArrived keeps a listing's resources for completion and says
// each server's failure once.
func (u *ui) resourcesArrived(m resourcesListed) {
	u.resListing = false
	u.mentionRes = make(map[string]mcp.Resource, len(m.res))
	u.resTokens = u.resTokens[:0]
	for _, r := range m.res {
		tok := resourceToken(r)
		if _, dup := u.mentionRes[tok]; dup {
			continue
		}
		u.mentionRes[tok] = r
		u.resTokens = append(u.resTokens, tok)
	}
	for _, err := range m.errs {
		msg := err.Error()
		if u.resWarned[msg] {
			continue
		}
		if u.resWarned == nil {
			u.resWarned = map[string]bool{}
		}
		u.resWarned[msg] = true
		u.tr.Note(u.st.Warn(sanitize(msg)))
	}
	u.mentionRanked = false // rank again with the resources
	if u.resStale {
		u.listResources() // a server changed while this listing ran
	}
}

// isResource reports whether a suggestion is an MCP resource.
func (u *ui) isResource(s string) bool {
	_, ok := u.mentionRes[s]
	return ok
}

// rankResources ranks the resource tokens for q by the token or the
// resource's name, whichever matches better; an empty query offers all.
func rankResources(tokens []string, byToken map[string]mcp.Resource, q string, n int) []scored {
	lq := []byte(strings.ToLower(q))
	var out []scored
	for _, tok := range tokens {
		s, ok := fuzzyScore(tok, lq)
		if r := byToken[tok]; r.Name != "" {
			if ns, nok := fuzzyScore(r.Name, lq); nok && (!ok || ns > s) {
				s, ok = ns, true
			}
		}
		if ok {
			out = insertBest(out, scored{tok, s}, n)
		}
	}
	return out
}

// resourceRef is an @server:uri in a message.
type resourceRef struct {
	server, uri string
}

// mentionedResources are the @server:uri words of text naming a server
// the manager runs (and no existing file), in order, each once.
func mentionedResources(text, dir string, isServer func(string) bool) []resourceRef {
	var out []resourceRef
	seen := map[string]bool{}
	for _, w := range mentionWords(text) {
		srv, uri, ok := strings.Cut(w, ":")
		if !ok || srv == "" || uri == "" || seen[w] || !isServer(srv) {
			continue
		}
		if _, err := os.Stat(absIn(dir, w)); err == nil {
			continue // a file whose name holds a colon
		}
		seen[w] = true
		out = append(out, resourceRef{server: srv, uri: uri})
	}
	return out
}

// resourceReader reads MCP resources ([mcp.Manager]).
type resourceReader interface {
	ReadResource(ctx context.Context, server, uri string) ([]mcp.ResourceContent, error)
}

// attachResources reads the mentioned resources. A failed read is a
// warning (the message goes without it, and says nothing is attached); an
// image resource for a model that reads no images refuses the message.
func attachResources(ctx context.Context, rr resourceReader, refs []resourceRef, images imagePolicy) (blocks []llm.Block, warnings []string, err error) {
	for _, ref := range refs {
		tok := ref.server + ":" + ref.uri
		parts, rerr := rr.ReadResource(ctx, ref.server, ref.uri)
		if rerr != nil {
			warnings = append(warnings, fmt.Sprintf("@%s not attached: %v", tok, rerr))
			continue
		}
		for _, p := range parts {
			switch {
			case p.Blob == nil:
				blocks = append(blocks, resourceText(tok, ref, p))
			case blobImage(p) != "":
				mime := blobImage(p)
				if !images.accept {
					return nil, nil, &refusal{fmt.Sprintf("not sent: %s does not read images (@%s is %s); switch with /model, or remove it and send again", images.model, tok, mime)}
				}
				if len(p.Blob) > maxImageBytes {
					warnings = append(warnings, fmt.Sprintf("@%s not attached: the image is %s, more than the %s a model accepts", tok, fmtBytes(int64(len(p.Blob))), fmtBytes(maxImageBytes)))
					continue
				}
				blocks = append(blocks, imageBlocks(tok, mime, p.Blob)...)
			default:
				mime := cmpOr(p.MIMEType, http.DetectContentType(p.Blob))
				blocks = append(blocks, llm.Text(fmt.Sprintf("%s%q kind=\"binary\" type=%q bytes=\"%d\">\nThe user mentioned the MCP resource %s of the server %s: binary content (%s, %s), not shown.\n</mention>",
					mentionTag, tok, mime, len(p.Blob), cmpOr(p.URI, ref.uri), ref.server, mime, fmtBytes(int64(len(p.Blob))))))
			}
		}
	}
	return blocks, warnings, nil
}

// resourceText is a text resource's attachment, cut at maxResourceChars.
func resourceText(tok string, ref resourceRef, p mcp.ResourceContent) llm.Block {
	text := p.Text
	cut := ""
	if n := utf8.RuneCountInString(text); n > maxResourceChars {
		i := 0
		for k := range text {
			if i == maxResourceChars {
				text = text[:k]
				break
			}
			i++
		}
		cut = fmt.Sprintf("\n[cut: the first %d of %d characters are shown]", maxResourceChars, n)
	}
	text = strings.TrimRight(text, "\n")
	lines := 0
	if text != "" {
		lines = strings.Count(text, "\n") + 1
	}
	kind := ""
	if p.MIMEType != "" {
		kind = " (" + p.MIMEType + ")"
	}
	return llm.Text(fmt.Sprintf("%s%q kind=\"resource\" lines=\"%d\">\nThe user mentioned the MCP resource %s of the server %s%s; its content:\n%s%s\n</mention>",
		mentionTag, tok, lines, cmpOr(p.URI, ref.uri), ref.server, kind, text, cut))
}

// blobImage is the media type of a blob a model can read as an image, or
// "".
func blobImage(p mcp.ResourceContent) string {
	mt := http.DetectContentType(p.Blob)
	if imageTypes[mt] {
		return mt
	}
	return ""
}
