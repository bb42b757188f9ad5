package browser

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"sync"
)

// AppBoot is what the live UI's page starts with: the log-in it belongs
// to. The page is served only to the holder of the session cookie, and a
// page of another origin cannot read it, so the CSRF token in it reaches
// this origin's scripts alone.
type AppBoot struct {
	// CSRF is the token every state-changing request sends back in the
	// X-CSRF-Token header.
	CSRF string `json:"csrf"`
	// Token and Access name the bearer token the log-in was made with.
	Token   string `json:"token"`
	Access  string `json:"access"`
	Version string `json:"version,omitempty"`
}

type appData struct {
	AppBoot
	Prices []priceRow `json:"prices"`
}

// The live UI's scripts: the session view, then its entry point.
var appJS = sync.OnceValue(func() string { return bundle(append(append([]string{}, viewScripts...), "app.js")...) })

// AppPage is the live UI for a logged-in browser, and the policy to send
// with it as the Content-Security-Policy header.
func AppPage(boot AppBoot) (page []byte, csp string, err error) {
	js, err := json.Marshal(appData{AppBoot: boot, Prices: prices()}) // escapes <, > and &
	if err != nil {
		return nil, "", fmt.Errorf("browser: encoding the page's boot data: %w", err)
	}
	css, script := styleCSS(), appJS()
	var b bytes.Buffer
	b.Grow(len(css) + len(script) + len(js) + 1024)
	b.WriteString("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	b.WriteString(`<meta name="viewport" content="width=device-width, initial-scale=1">` + "\n")
	b.WriteString(`<meta name="referrer" content="same-origin">` + "\n")
	b.WriteString("<title>dsh</title>\n<style>" + css + "</style>\n</head>\n")
	b.WriteString(`<body class="app-page"><div id="app"><noscript><p class="empty-state">The dsh web UI needs JavaScript.</p></noscript></div>` + "\n")
	b.WriteString(`<script type="application/json" id="dsh-boot">`)
	b.Write(js)
	b.WriteString("</script>\n<script>" + script + "</script>\n</body>\n</html>\n")
	return b.Bytes(), AppCSP(css, script), nil
}

// AppCSP is the live UI's policy: its one style and one script by hash,
// connections to its own origin only (the API and its event streams),
// images only as data: URLs, no frames (nor being framed), forms posting
// only here, and Trusted Types with no policy, so no string can become
// HTML.
func AppCSP(css, script string) string {
	return "default-src 'none'; script-src " + hash(script) + "; style-src " + hash(css) +
		"; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'" +
		"; require-trusted-types-for 'script'; trusted-types 'none'"
}

// LoginPage is the log-in form (a plain form: no script at all), with
// message shown above it (a failed attempt's reason, or ""), and its
// policy.
func LoginPage(message, version string) (page []byte, csp string) {
	css := styleCSS()
	var b bytes.Buffer
	b.WriteString("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	b.WriteString(`<meta name="viewport" content="width=device-width, initial-scale=1">` + "\n")
	b.WriteString(`<meta name="referrer" content="same-origin">` + "\n")
	b.WriteString("<title>Log in · dsh</title>\n<style>" + css + "</style>\n</head>\n<body>\n")
	b.WriteString(`<main class="login"><h1>dsh<span class="muted">` + html.EscapeString(" "+version) + `</span></h1>` +
		`<p class="muted">Log in with a token of this server (<code>dsh serve token create NAME</code> makes one).</p>` +
		`<form method="post" action="/ui/login">` +
		`<label for="token">Token</label>` +
		`<input type="password" id="token" name="token" autocomplete="current-password" spellcheck="false" required autofocus>` +
		`<div class="err" id="login-error" role="alert">` + html.EscapeString(message) + `</div>` +
		`<button class="btn primary" type="submit">Log in</button></form></main>` + "\n</body>\n</html>\n")
	return b.Bytes(), "default-src 'none'; script-src 'none'; style-src " + hash(css) +
		"; img-src data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
}
