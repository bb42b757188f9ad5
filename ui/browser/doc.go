// Package browser is dsh's browser front-end: the web UI that `dsh serve`
// serves, and the static trace that `dsh sessions show --html` writes.
// Both render a session with one script (assets/view.js) from the session
// log's own events, so a running session, a finished one and a shared
// file look the same.
//
// Everything the pages need is embedded in the binary and nothing is
// fetched from elsewhere: no fonts, scripts or styles from a CDN, and no
// build step (the scripts are plain modern JavaScript, concatenated in a
// fixed order at start-up).
//
// Safety is by construction rather than by filtering HTML afterwards:
// every string from a session (model text, tool output, arguments) reaches
// the DOM as text nodes (assets/dom.js); Markdown is turned into elements
// by a parser that never emits HTML; links are followed only to http(s)
// and mailto; images are never loaded. The pages' Content-Security-Policy
// forbids inline and foreign scripts and, through Trusted Types, any
// string-to-HTML sink, so a mistake that tried to insert markup would
// throw instead. The live UI authenticates with the server's bearer
// tokens, held in an HttpOnly SameSite=Strict cookie after log-in, and
// checks a CSRF token and the request's origin on every state-changing
// request.
package browser
