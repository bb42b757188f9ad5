package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dshq/dsh/llm"
)

// ErrorName is the Name of every error this seam reports.
const ErrorName = "WebError"

// Error codes. The set is open: consumers must tolerate codes they do not
// know.
const (
	// CodeInvalidURL: the URL does not parse, is not http(s) or is too long.
	CodeInvalidURL = "INVALID_URL"
	// CodeBlocked: the URL or an address it resolves to is not allowed
	// (credentials in the URL, loopback, private, link-local, CGNAT or
	// cloud-metadata addresses), also on a redirect; or the redirect chain
	// is longer than allowed.
	CodeBlocked = "BLOCKED"
	// CodeTimeout: the operation did not finish within its time limit.
	CodeTimeout = "TIMEOUT"
	// CodeTooLarge: the response declares more bytes than the limit.
	CodeTooLarge = "TOO_LARGE"
	// CodeHTTPStatus: the server answered with a non-success status.
	CodeHTTPStatus = "HTTP_STATUS"
	// CodeUnsupportedContent: the content type cannot be turned into text
	// (images, PDFs, archives, …).
	CodeUnsupportedContent = "UNSUPPORTED_CONTENT"
	// CodeProviderUnavailable: no usable provider (none registered, the
	// configured one missing or without credentials, or the API rejected
	// the credentials).
	CodeProviderUnavailable = "PROVIDER_UNAVAILABLE"
	// CodeRateLimited: the server or API asked us to slow down (HTTP 429);
	// [RetryAfter] tells how long when the server said.
	CodeRateLimited = "RATE_LIMITED"
	// CodeProviderError: anything else that went wrong talking to a
	// provider: DNS, connection or TLS failures, malformed responses.
	CodeProviderError = "PROVIDER_ERROR"
	// CodeAborted: the caller cancelled the operation.
	CodeAborted = "ABORTED"
	// CodeDuplicateProvider: a provider id was registered twice (a
	// programming error, reported at registration).
	CodeDuplicateProvider = "DUPLICATE_PROVIDER"
)

// Errorf returns a WebError with the given code.
func Errorf(code, format string, args ...any) *llm.Error {
	return &llm.Error{Name: ErrorName, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns a WebError with the given code and cause.
func Wrap(code string, cause error, format string, args ...any) *llm.Error {
	e := Errorf(code, format, args...)
	e.Cause = cause
	return e
}

// RateLimit is the cause of a RATE_LIMITED error; RetryAfter is zero when
// the server did not say.
type RateLimit struct{ RetryAfter time.Duration }

func (r *RateLimit) Error() string {
	if r.RetryAfter > 0 {
		return "rate limited; retry after " + r.RetryAfter.String()
	}
	return "rate limited"
}

// RetryAfter returns how long a RATE_LIMITED error asks the caller to wait.
func RetryAfter(err error) (time.Duration, bool) {
	var rl *RateLimit
	if errors.As(err, &rl) && rl.RetryAfter > 0 {
		return rl.RetryAfter, true
	}
	return 0, false
}

// ParseRetryAfter reads a Retry-After header (delay-seconds or an HTTP
// date) relative to now; zero when absent or unreadable.
func ParseRetryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseFloat(v, 64); err == nil && n >= 0 {
		return time.Duration(n * float64(time.Second)).Round(time.Second)
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now).Round(time.Second); d > 0 {
			return d
		}
	}
	return 0
}

// StatusError maps a non-success HTTP response of a provider's API to the
// taxonomy: 401/403 → PROVIDER_UNAVAILABLE (the credential was rejected,
// see [CredentialError]), 429 → RATE_LIMITED (with Retry-After), anything
// else → HTTP_STATUS. who names the provider ("Exa"); detail is the API's
// own error message (may be empty); credential names what to check
// ("EXA_API_KEY").
func StatusError(who string, status int, h http.Header, detail, credential string) *llm.Error {
	if status == http.StatusUnauthorized || status == http.StatusForbidden {
		return CredentialError(who, status, detail, credential)
	}
	text := statusText(status, detail)
	var e *llm.Error
	switch {
	case status == http.StatusTooManyRequests:
		rl := &RateLimit{RetryAfter: ParseRetryAfter(h, time.Now())}
		msg := fmt.Sprintf("%s rate limit reached (%s)", who, text)
		if rl.RetryAfter > 0 {
			msg += "; retry after " + rl.RetryAfter.String()
		} else {
			msg += "; wait before retrying"
		}
		e = Wrap(CodeRateLimited, rl, "%s", msg)
	case status >= 500:
		e = Errorf(CodeHTTPStatus, "%s is failing (%s); try again later", who, text)
	default:
		e = Errorf(CodeHTTPStatus, "%s request failed (%s)", who, text)
	}
	e.Status = status
	return e
}

// CredentialError is the PROVIDER_UNAVAILABLE error of an API that
// rejected its credential.
func CredentialError(who string, status int, detail, credential string) *llm.Error {
	hint := ""
	if credential != "" {
		hint = "; check " + credential
	}
	e := Errorf(CodeProviderUnavailable, "%s rejected the request (%s)%s", who, statusText(status, detail), hint)
	e.Status = status
	return e
}

func statusText(status int, detail string) string {
	text := fmt.Sprintf("HTTP %d", status)
	if st := http.StatusText(status); st != "" {
		text += " " + st
	}
	if detail = oneLine(detail, 300); detail != "" {
		text += ": " + detail
	}
	return text
}

// ContextError maps the end of ctx to the taxonomy: ABORTED when the caller
// cancelled, TIMEOUT when a deadline passed. It returns nil while ctx is
// live. what names the operation ("Exa search", "fetching https://…").
func ContextError(ctx context.Context, what string) *llm.Error {
	if ctx.Err() == nil {
		return nil
	}
	cause := context.Cause(ctx)
	var we *llm.Error
	if errors.As(cause, &we) && we.Name == ErrorName {
		return we
	}
	if errors.Is(cause, context.DeadlineExceeded) {
		return Wrap(CodeTimeout, cause, "%s timed out", what)
	}
	return Wrap(CodeAborted, cause, "%s was cancelled", what)
}

// oneLine collapses whitespace and cuts s to n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return s
}
