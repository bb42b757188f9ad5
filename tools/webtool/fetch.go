package webtool

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/dshq/dsh/tool"
	"github.com/dshq/dsh/web"
)

//go:embed web_fetch.md
var fetchDescription string

// minMaxLength is the smallest max_length accepted.
const minMaxLength = 1000

type fetchTool struct {
	svc  *web.Service
	o    Options
	info tool.Info
}

func newFetch(svc *web.Service, o Options) *fetchTool {
	schema := fmt.Sprintf(`{"type":"object","properties":{`+
		`"url":{"type":"string","minLength":1,"description":"The URL to fetch (http or https)."},`+
		`"prompt":{"type":"string","description":"Optional: what you are looking for on the page. When the page is longer than max_length, the sections most relevant to it are returned instead of only the beginning."},`+
		`"max_length":{"type":"integer","minimum":%d,"maximum":%d,"description":"Maximum number of characters of content to return. Default %d."}`+
		`},"required":["url"]}`, minMaxLength, o.MaxLengthLimit, o.MaxLength)
	return &fetchTool{svc: svc, o: o, info: tool.Info{
		Name:        FetchName,
		Description: describe(fetchDescription, o),
		Parameters:  json.RawMessage(schema),
		Kind:        tool.KindFetch,
		ReadOnly:    true,
		Concurrent:  true,
	}}
}

func (t *fetchTool) Info() tool.Info { return t.info }

type fetchArgs struct {
	URL       string `json:"url"`
	Prompt    string `json:"prompt"`
	MaxLength *int   `json:"max_length"`
}

// fetchMeta is the presentation data of a web_fetch result.
type fetchMeta struct {
	URL         string `json:"url"`
	FinalURL    string `json:"finalUrl"`
	Title       string `json:"title,omitempty"`
	Status      int    `json:"status"`
	ContentType string `json:"contentType,omitempty"`
	Format      string `json:"format,omitempty"`
	Provider    string `json:"provider,omitempty"`
	// Chars is the length of the whole content, Shown how much of it the
	// model got.
	Chars int `json:"chars"`
	Shown int `json:"shown"`
	// Truncated: the body was cut at the provider's byte limit.
	Truncated bool `json:"truncated,omitempty"`
	Cached    bool `json:"cached,omitempty"`
	Focused   bool `json:"focused,omitempty"`
}

func (t *fetchTool) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	a, err := tool.DecodeArgs[fetchArgs](call)
	if err != nil {
		return tool.Result{}, err
	}
	if strings.TrimSpace(a.URL) == "" {
		return tool.Result{}, errors.New("url must be a non-empty string")
	}
	limit := t.o.MaxLength
	if a.MaxLength != nil {
		if *a.MaxLength < 1 {
			return tool.Result{}, errors.New("max_length must be a positive integer")
		}
		limit = min(max(*a.MaxLength, minMaxLength), t.o.MaxLengthLimit)
	}
	res, err := t.svc.Fetch(ctx, web.FetchRequest{URL: a.URL, SessionID: sessionID(call)})
	if err != nil {
		return tool.Result{}, err
	}
	text, shown, focused := render(res, strings.TrimSpace(a.Prompt), limit, t.o.MaxLengthLimit)
	m := fetchMeta{
		URL: res.URL, FinalURL: res.FinalURL, Title: res.Title, Status: res.Status,
		ContentType: res.ContentType, Format: res.Format, Provider: res.Provider,
		Chars: utf8.RuneCountInString(res.Content), Shown: shown,
		Truncated: res.Truncated, Cached: res.Cached, Focused: focused,
	}
	return tool.Result{Content: tool.TextResult(text).Content, Meta: encodeMeta(m)}, nil
}

// render is the model's view of a fetched page: a header (final URL,
// title, redirect), the content cut to limit characters (or, with a
// prompt, its most relevant sections) and a note on what was left out.
func render(res *web.FetchResult, prompt string, limit, maxLimit int) (text string, shown int, focused bool) {
	var b strings.Builder
	fmt.Fprintf(&b, "URL: %s\n", res.FinalURL)
	if res.Title != "" {
		fmt.Fprintf(&b, "Title: %s\n", strings.Join(strings.Fields(res.Title), " "))
	}
	if res.URL != "" && res.URL != res.FinalURL {
		fmt.Fprintf(&b, "Redirected from: %s\n", res.URL)
	}
	if res.Format == web.FormatJSON || res.Format == web.FormatText {
		fmt.Fprintf(&b, "Content-Type: %s\n", res.ContentType)
	}
	b.WriteString("\n")

	content := strings.TrimSpace(res.Content)
	total := utf8.RuneCountInString(content)
	if total == 0 {
		b.WriteString("(The page has no readable text content.)")
		return b.String(), 0, false
	}
	var notes []string
	body := content
	shown = total
	if total > limit {
		if prompt != "" {
			if sel, ok := focus(content, prompt, limit); ok {
				body, shown, focused = sel.text, sel.chars, true
				notes = append(notes, fmt.Sprintf("[Showing the %d of %d sections most relevant to the prompt (%d of %d characters). Omitted: %s. Call web_fetch with a different prompt or a larger max_length (up to %d) for the rest.]",
					sel.kept, sel.total, sel.chars, total, sel.omitted, maxLimit))
			}
		}
		if !focused {
			body = cut(content, limit)
			shown = utf8.RuneCountInString(body)
			hint := fmt.Sprintf("call web_fetch again with a larger max_length (up to %d)", maxLimit)
			if limit >= maxLimit {
				hint = "fetch a more specific URL (a section anchor or sub-page)"
			}
			notes = append(notes, fmt.Sprintf("[Content truncated: showing the first %d of %d characters. To read more, %s, or pass a prompt naming what you need so the relevant sections are kept.]",
				shown, total, hint))
		}
	}
	if res.Truncated {
		notes = append(notes, fmt.Sprintf("[The page is larger than the download limit: only its first %d bytes were read.]", res.Bytes))
	}
	b.WriteString(body)
	for _, n := range notes {
		b.WriteString("\n\n")
		b.WriteString(n)
	}
	return b.String(), shown, focused
}

// cut returns the first n characters of s, ending at a paragraph or line
// break when one is near, and closes a code fence left open.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := byteIndex(s, n)
	head := s[:i]
	if j := strings.LastIndex(head, "\n\n"); j >= i*4/5 {
		head = head[:j]
	} else if j := strings.LastIndex(head, "\n"); j >= i*9/10 {
		head = head[:j]
	}
	head = strings.TrimRight(head, " \t\n")
	if openFence(head) {
		head += "\n```"
	}
	return head
}

// byteIndex is the byte offset of the n-th rune of s.
func byteIndex(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}

// openFence reports whether s ends inside a ``` code block.
func openFence(s string) bool {
	open := false
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			open = !open
		}
	}
	return open
}

// PresentCall implements tool.CallPresenter.
func (t *fetchTool) PresentCall(args json.RawMessage) *tool.View {
	var a fetchArgs
	if json.Unmarshal(args, &a) != nil || strings.TrimSpace(a.URL) == "" {
		return nil
	}
	return &tool.View{Title: "Fetch " + strings.TrimSpace(a.URL), Kind: tool.KindFetch, Text: strings.TrimSpace(a.Prompt)}
}

// PresentResult implements tool.ResultPresenter: the page title and final
// URL with how much was read, from Meta.
func (t *fetchTool) PresentResult(_ json.RawMessage, res tool.Result) *tool.View {
	if res.IsError || len(res.Meta) == 0 {
		return nil
	}
	var m fetchMeta
	if json.Unmarshal(res.Meta, &m) != nil || m.FinalURL == "" {
		return nil
	}
	title := m.Title
	if title == "" {
		title = m.FinalURL
		if u, err := url.Parse(m.FinalURL); err == nil && u.Host != "" {
			title = u.Host + u.Path
		}
	}
	parts := []string{m.FinalURL}
	if m.Shown < m.Chars {
		parts = append(parts, fmt.Sprintf("%d of %d characters", m.Shown, m.Chars))
	} else {
		parts = append(parts, fmt.Sprintf("%d characters", m.Chars))
	}
	if m.Cached {
		parts = append(parts, "cached")
	}
	return &tool.View{Title: "Fetched " + title, Kind: tool.KindFetch, Text: strings.Join(parts, " · ")}
}
