// Package api is what the search providers share: one JSON round trip with
// the web error mapping, and small text helpers.
package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dshq/dsh/web"
)

// UserAgent is sent to search APIs.
const UserAgent = "dsh/1.0 (+https://github.com/dshq/dsh)"

// MaxBody caps how much of an API response is read.
const MaxBody = 16 << 20

// Endpoint describes who is being called, for messages.
type Endpoint struct {
	// Name is the provider's display name ("Exa").
	Name string
	// Credential is what the user should check when the API rejects the
	// key ("EXA_API_KEY").
	Credential string
	Client     *http.Client
	Timeout    time.Duration
	// Detail extracts the API's own error message from an error body;
	// nil uses [ErrorDetail].
	Detail func(status int, body []byte) string
	// Rejected, when set, recognizes error responses that mean the
	// credential was rejected although the status is not 401/403 (an API
	// that reports a bad key as 422).
	Rejected func(status int, body []byte) bool
}

// Do sends req with ctx (bounded by e.Timeout), maps every failure to a web
// error and decodes a successful JSON body into out.
func (e Endpoint) Do(ctx context.Context, req *http.Request, out any) error {
	what := e.Name + " search"
	if e.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.Timeout)
		defer cancel()
	}
	req = req.WithContext(ctx)
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", UserAgent)
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	client := e.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return e.transport(ctx, what, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody))
	if err != nil {
		return e.transport(ctx, what, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		detail := ErrorDetail
		if e.Detail != nil {
			detail = e.Detail
		}
		msg := detail(resp.StatusCode, body)
		if e.Rejected != nil && e.Rejected(resp.StatusCode, body) {
			return web.CredentialError(e.Name, resp.StatusCode, msg, e.Credential)
		}
		h := resp.Header.Clone()
		if h.Get("Retry-After") == "" {
			if d := rateLimitReset(h.Get("X-RateLimit-Reset")); d > 0 {
				h.Set("Retry-After", strconv.Itoa(d))
			}
		}
		return web.StatusError(e.Name, resp.StatusCode, h, msg, e.Credential)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return web.Wrap(web.CodeProviderError, err, "%s returned a response dsh cannot read: %v", e.Name, err)
	}
	return nil
}

func (e Endpoint) transport(ctx context.Context, what string, err error) error {
	if we := web.ContextError(ctx, what); we != nil {
		return we
	}
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			err = inner
		}
	}
	return web.Wrap(web.CodeProviderError, err, "%s request failed: %v", what, err)
}

// rateLimitReset reads an X-RateLimit-Reset header: seconds until the
// first window resets ("1, 1419704" → 1); values that look like Unix
// timestamps are converted.
func rateLimitReset(v string) int {
	first, _, _ := strings.Cut(v, ",")
	n, err := strconv.ParseInt(strings.TrimSpace(first), 10, 64)
	if err != nil || n <= 0 {
		return 0
	}
	if n > 1_000_000_000 {
		n -= time.Now().Unix()
	}
	if n <= 0 || n > 24*3600 {
		return 0
	}
	return int(n)
}

// ErrorDetail finds an error message in a JSON error body: "error" (a
// string, or an object's "message"/"detail"), then "message", then
// "detail". A short non-JSON, non-HTML body is returned as it is.
func ErrorDetail(_ int, body []byte) string {
	var v map[string]json.RawMessage
	if json.Unmarshal(body, &v) == nil {
		if raw, ok := v["error"]; ok {
			var s string
			if json.Unmarshal(raw, &s) == nil && strings.TrimSpace(s) != "" {
				return s
			}
			var obj map[string]json.RawMessage
			if json.Unmarshal(raw, &obj) == nil {
				for _, k := range []string{"message", "detail"} {
					if json.Unmarshal(obj[k], &s) == nil && strings.TrimSpace(s) != "" {
						return s
					}
				}
			}
		}
		for _, k := range []string{"message", "detail"} {
			var s string
			if json.Unmarshal(v[k], &s) == nil && strings.TrimSpace(s) != "" {
				return s
			}
		}
		return ""
	}
	t := bytes.TrimSpace(body)
	if len(t) == 0 || len(t) > 300 || bytes.HasPrefix(t, []byte("<")) {
		return ""
	}
	return string(t)
}

var tags = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`<[^>]*>`) })

// PlainText strips HTML tags (Brave highlights matches with <strong>),
// decodes entities and collapses whitespace.
func PlainText(s string) string {
	if strings.ContainsAny(s, "<&") {
		s = html.UnescapeString(tags().ReplaceAllString(s, ""))
	}
	return strings.Join(strings.Fields(s), " ")
}

// Date shortens an ISO 8601 timestamp to its date ("2024-05-01T10:00:00Z"
// → "2024-05-01"); anything else is returned trimmed.
func Date(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 10 && s[4] == '-' && s[7] == '-' {
		if _, err := time.Parse("2006-01-02", s[:10]); err == nil {
			return s[:10]
		}
	}
	return s
}

// Join appends path to base with exactly one slash between them.
func Join(base, path string) string {
	return strings.TrimRight(base, "/") + "/" + strings.TrimLeft(path, "/")
}

// CheckBase reports whether base is an absolute http(s) URL.
func CheckBase(base string) error {
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return fmt.Errorf("base URL %q is not an http(s) URL", base)
	}
	return nil
}

// Count returns n, or def when n is not positive, capped at max.
func Count(n, def, max int) int {
	if n <= 0 {
		n = def
	}
	return min(n, max)
}
