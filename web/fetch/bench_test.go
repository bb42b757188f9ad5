package fetch

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/dshq/dsh/web"
)

// benchArticle is a ~200 KB blog-style page: site chrome (header,
// navigation, sidebar, footer, scripts, styles) around an article of
// sections with paragraphs, lists, links, inline code, code blocks and a
// table.
func benchArticle(size int) []byte {
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>A long article | Bench Blog</title>
<style>` + strings.Repeat(".c{color:#333;margin:0 auto}", 200) + `</style>
<script>` + strings.Repeat("window.x=(window.x||0)+1;", 200) + `</script></head><body>
<header><a href="/">Bench Blog</a><nav><ul>`)
	for i := range 30 {
		fmt.Fprintf(&b, `<li><a href="/section/%d">Section %d</a></li>`, i, i)
	}
	b.WriteString(`</ul></nav></header><div class="layout"><aside class="sidebar"><h3>Popular</h3><ul>`)
	for i := range 20 {
		fmt.Fprintf(&b, `<li><a href="/popular/%d">Popular post number %d</a></li>`, i, i)
	}
	b.WriteString(`</ul></aside><main><article><h1>A long article</h1>`)
	for i := 0; b.Len() < size-2000; i++ {
		fmt.Fprintf(&b, `<h2>Part %d: a heading</h2>`, i)
		for p := range 4 {
			fmt.Fprintf(&b, `<p>Paragraph %d of part %d discusses <code>context.Context</code>, <em>cancellation</em> and <strong>deadlines</strong> in some depth, `+
				`with a <a href="https://pkg.go.dev/context#WithTimeout">link to the documentation</a> and a <a href="/posts/%d">relative link</a>. `+
				`It goes on for a while so that the text has the density of a real article rather than a list of fragments.</p>`, p, i, i)
		}
		b.WriteString(`<ul><li>First point with <code>ctx.Done()</code></li><li>Second point</li><li>Third point with a <a href="/x">link</a></li></ul>`)
		if i%3 == 0 {
			b.WriteString(`<pre><code class="language-go">func work(ctx context.Context) error {
	for {
		select {
		case &lt;-ctx.Done():
			return ctx.Err()
		default:
		}
	}
}
</code></pre>`)
		}
		if i%5 == 0 {
			b.WriteString(`<table><thead><tr><th>Name</th><th>Value</th></tr></thead><tbody><tr><td>timeout</td><td>30s</td></tr><tr><td>retries</td><td>3</td></tr></tbody></table>`)
		}
	}
	b.WriteString(`</article></main></div><footer><p>Copyright Bench Blog</p><ul>`)
	for i := range 10 {
		fmt.Fprintf(&b, `<li><a href="/legal/%d">Legal %d</a></li>`, i, i)
	}
	b.WriteString(`</ul></footer><script>window.track()</script></body></html>`)
	return []byte(b.String())
}

// BenchmarkFetchArticle measures one web fetch of a ~200 KB HTML article
// from a loopback server: HTTP round trip, charset detection, readability
// extraction and Markdown conversion.
func BenchmarkFetchArticle(b *testing.B) {
	page := benchArticle(200 << 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(page)
	}))
	defer srv.Close()
	p := New(Options{Allow: []netip.AddrPort{addrOf(srv)}})
	defer p.Close()
	ctx := context.Background()
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	var md int
	for b.Loop() {
		r, err := p.Fetch(ctx, web.FetchRequest{URL: srv.URL + "/article"})
		if err != nil {
			b.Fatal(err)
		}
		md = len(r.Content)
	}
	b.ReportMetric(float64(md), "md-bytes")
}

// BenchmarkHTMLToMarkdown is the conversion alone.
func BenchmarkHTMLToMarkdown(b *testing.B) {
	page := benchArticle(200 << 10)
	u, _ := url.Parse("https://bench.example/posts/long")
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := HTMLToMarkdown(page, u); err != nil {
			b.Fatal(err)
		}
	}
}
