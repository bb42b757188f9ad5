package serve

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/dshq/dsh/serve/api"
	"github.com/dshq/dsh/serve/tokens"
	"github.com/dshq/dsh/serve/weblogin"
	"github.com/dshq/dsh/ui/browser"
)

// The web UI (package ui/browser's live page) logs in by exchanging a
// bearer token for a session cookie: the token itself never reaches a
// script (the cookie is HttpOnly) and is sent to no other site (SameSite
// Strict). A cookie travels with any request the browser makes to this
// origin, so a request it authenticates may change something only when it
// also carries the log-in's CSRF token (which only this origin's pages can
// read) and, when the browser says where it comes from, comes from this
// origin. docs/rfc/implemented/feature/2026-12-02-web-ui-cookie-login-and-csrf.md
// has the reasoning.

// uiCookie names the web UI's session cookie.
const uiCookie = "dsh_ui"

// csrfHeader carries the log-in's CSRF token.
const csrfHeader = "X-CSRF-Token"

// Log-ins are kept by Options.Logins (package weblogin): in memory for a
// lone server, in the database for a fleet, so that any worker honours a
// cookie another made and a log-out on one ends it on all. The store holds
// no secret: the cookie's hash, and the token's id and hash.

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// webLogin is the log-in a request's cookie stands for.
type webLogin struct {
	cookie string
	tok    tokens.Token
}

// csrf is the log-in's CSRF token.
func (l *webLogin) csrf() string { return weblogin.CSRF(l.cookie) }

// cookieLogin is the request's log-in when it carries the cookie of one
// that is live and whose token is not revoked; an error when the log-ins
// could not be read.
func (s *Server) cookieLogin(r *http.Request) (*webLogin, error) {
	ck, err := r.Cookie(uiCookie)
	if err != nil || ck.Value == "" {
		return nil, nil
	}
	l, ok, err := s.logins.Get(r.Context(), weblogin.Key(ck.Value), s.o.Now())
	if err != nil || !ok {
		return nil, err
	}
	tok, ok := s.o.Tokens.Current(l.TokenID, l.TokenHash)
	if !ok {
		return nil, nil
	}
	return &webLogin{cookie: ck.Value, tok: tok}, nil
}

// sameOrigin tells whether a browser request comes from this server's own
// pages, by what the browser says: Sec-Fetch-Site when it sends one (every
// current browser does), else Origin. A request with neither (curl, a
// program) is not a browser's forged one.
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin", "none":
		return originIs(r, true)
	case "":
		return originIs(r, false)
	}
	return false
}

// originIs checks the Origin header against the request's own origin;
// "null" (what a page under a strict referrer policy sends) counts as a
// match only when Sec-Fetch-Site vouched for the request already.
func originIs(r *http.Request, vouched bool) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || (origin == "null" && vouched) {
		return true
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return origin == scheme+"://"+r.Host
}

// checkCSRF refuses a state-changing request authenticated by the cookie
// that lacks the log-in's CSRF token or comes from another origin. It has
// answered the request when it returns false.
func checkCSRF(w http.ResponseWriter, r *http.Request, l *webLogin) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	got := r.Header.Get(csrfHeader)
	if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(l.csrf())) != 1 || !sameOrigin(r) {
		writeError(w, http.StatusForbidden, api.CodeForbidden, "a request authenticated by the web UI's cookie must come from its page and carry its "+csrfHeader+" header")
		return false
	}
	return true
}

// securePage sets the headers of the UI's HTML pages.
func securePage(w http.ResponseWriter, csp string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", csp)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}

// uiPage is GET /ui: the live UI for a logged-in browser, the log-in form
// for anyone else.
func (s *Server) uiPage(w http.ResponseWriter, r *http.Request, _ *call) {
	l, err := s.cookieLogin(r)
	if err != nil {
		s.loginUnavailable(w, err)
		return
	}
	if l != nil {
		page, csp, err := browser.AppPage(browser.AppBoot{CSRF: l.csrf(), Token: l.tok.Name, Access: l.tok.Access, Version: s.o.Version})
		if err != nil {
			s.fail(w, err)
			return
		}
		securePage(w, csp)
		_, _ = w.Write(page)
		return
	}
	s.loginForm(w, http.StatusOK, "")
}

// loginUnavailable answers a request whose log-in could not be read or
// written (the database of a fleet is down).
func (s *Server) loginUnavailable(w http.ResponseWriter, err error) {
	s.log.Warn("serve: web log-ins", "err", err)
	w.Header().Set("Retry-After", "5")
	s.loginForm(w, http.StatusServiceUnavailable, "Log-ins cannot be checked right now; try again shortly.")
}

func (s *Server) loginForm(w http.ResponseWriter, status int, msg string) {
	page, csp := browser.LoginPage(msg, s.o.Version)
	securePage(w, csp)
	w.WriteHeader(status)
	_, _ = w.Write(page)
}

// uiLogin is POST /ui/login: a form with the bearer token in, the session
// cookie out (and a redirect to the UI). Attempts are rate-limited per
// client address, and a browser's attempt must come from this origin (a
// forged log-in would put the victim in the attacker's account).
func (s *Server) uiLogin(w http.ResponseWriter, r *http.Request, _ *call) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if !s.limiter("login:" + host).Allow() {
		w.Header().Set("Retry-After", "1")
		s.loginForm(w, http.StatusTooManyRequests, "Too many attempts; wait a moment and try again.")
		return
	}
	if !sameOrigin(r) {
		s.loginForm(w, http.StatusForbidden, "A log-in must come from this server's own page.")
		return
	}
	if err := r.ParseForm(); err != nil {
		s.loginForm(w, http.StatusBadRequest, "The log-in form could not be read.")
		return
	}
	raw := strings.TrimSpace(r.PostForm.Get("token"))
	tok, ok := tokens.Token{}, false
	if raw != "" {
		tok, ok = s.o.Tokens.Check(raw)
	}
	if !ok {
		s.loginForm(w, http.StatusUnauthorized, "That token is not valid on this server.")
		return
	}
	id := randomToken()
	now := s.o.Now()
	if err := s.logins.Put(r.Context(), weblogin.Key(id), weblogin.Login{TokenID: tok.ID, TokenHash: tok.Hash, Expires: now.Add(s.o.UISessionTTL)}, now); err != nil {
		s.loginUnavailable(w, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: uiCookie, Value: id, Path: "/", HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode, MaxAge: int(s.o.UISessionTTL / time.Second)})
	s.log.Info("serve: web log-in", "token", tok.Name)
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, "/ui", http.StatusSeeOther)
}

// uiLogout is POST /ui/logout: the log-in ends here and now (the cookie
// alone would only be forgotten by this browser).
func (s *Server) uiLogout(w http.ResponseWriter, r *http.Request, _ *call) {
	if ck, err := r.Cookie(uiCookie); err == nil && ck.Value != "" {
		if err := s.logins.Delete(r.Context(), weblogin.Key(ck.Value)); err != nil {
			s.log.Warn("serve: web log-out", "err", err)
			writeError(w, http.StatusServiceUnavailable, api.CodeUnavailable, "the log-in could not be ended right now; try again shortly")
			return
		}
	}
	http.SetCookie(w, &http.Cookie{Name: uiCookie, Value: "", Path: "/", HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode, MaxAge: -1})
	w.WriteHeader(http.StatusNoContent)
}
