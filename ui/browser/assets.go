package browser

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
)

//go:embed assets
var assetFS embed.FS

// The scripts of the session view, in the order they depend on each
// other; the trace and the live UI each add their own entry point.
var viewScripts = []string{"dom.js", "markdown.js", "highlight.js", "ansi.js", "diff.js", "pricing.js", "view.js", "usage.js", "common.js"}

func asset(name string) string {
	b, err := assetFS.ReadFile("assets/" + name)
	if err != nil {
		panic(fmt.Sprintf("browser: missing embedded asset %s: %v", name, err))
	}
	return string(b)
}

// bundle concatenates scripts; each is a strict-mode file that adds to the
// shared dsh namespace.
func bundle(names ...string) string {
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "/* %s */\n", n)
		b.WriteString(asset(n))
		b.WriteString("\n")
	}
	return b.String()
}

// hash is a CSP source expression for an inline element's exact text.
func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

var (
	styleCSS = sync.OnceValue(func() string { return asset("style.css") })
	traceJS  = sync.OnceValue(func() string { return bundle(append(append([]string{}, viewScripts...), "trace.js")...) })
)
