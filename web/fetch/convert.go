package fetch

import (
	"bytes"
	"net/url"
	"regexp"
	"strings"
	"sync"

	readability "codeberg.org/readeck/go-readability/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/strikethrough"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Document is an HTML page turned into Markdown.
type Document struct {
	Title    string
	Markdown string
	// Readable says the main content was extracted by readability; false
	// means the whole body was converted (minus navigation and chrome).
	Readable bool
}

// minReadableChars is how much text readability must find for its
// extraction to be trusted; shorter results (index pages, tiny pages) fall
// back to converting the whole body.
const minReadableChars = 200

// HTMLToMarkdown extracts the main content of an HTML page with
// go-readability (dropping navigation, sidebars, footers, scripts and
// styles) and converts it to Markdown: headings, lists, code blocks (with
// their language), tables and links survive. pageURL resolves relative
// links and may be nil. src must already be UTF-8.
func HTMLToMarkdown(src []byte, pageURL *url.URL) (Document, error) {
	doc, err := html.Parse(bytes.NewReader(src))
	if err != nil {
		return Document{}, err
	}
	title := pageTitle(doc)
	p := readability.NewParser()
	p.KeepClasses = true // code blocks keep their language-* class
	if pageURL == nil {
		pageURL = &url.URL{}
	}
	var node *html.Node
	art, err := p.ParseAndMutate(doc, pageURL)
	readable := err == nil && art.Node != nil && textLen(art.Node, minReadableChars) >= minReadableChars
	if readable {
		node = art.Node
		if t := strings.TrimSpace(art.Title()); t != "" {
			title = t
		}
	} else {
		// readability mutated doc; start again from the source.
		doc, err = html.Parse(bytes.NewReader(src))
		if err != nil {
			return Document{}, err
		}
		node = findBody(doc)
		removeChrome(node)
	}
	clean(node)
	md, err := markdownConverter().ConvertNode(node, converter.WithDomain(pageURL.String()))
	if err != nil {
		return Document{}, err
	}
	return Document{Title: title, Markdown: tidyMarkdown(string(md)), Readable: readable}, nil
}

var markdownConverter = sync.OnceValue(func() *converter.Converter {
	return converter.NewConverter(converter.WithPlugins(
		base.NewBasePlugin(),
		commonmark.NewCommonmarkPlugin(),
		table.NewTablePlugin(),
		strikethrough.NewStrikethroughPlugin(),
	))
})

var blankLines = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\n{3,}`) })

func tidyMarkdown(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = blankLines().ReplaceAllString(s, "\n\n")
	return strings.TrimSpace(s)
}

// pageTitle returns the document's <title>, whitespace collapsed.
func pageTitle(doc *html.Node) string {
	var walk func(*html.Node) string
	walk = func(n *html.Node) string {
		if n.Type == html.ElementNode && n.DataAtom == atom.Title {
			var b strings.Builder
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == html.TextNode {
					b.WriteString(c.Data)
				}
			}
			return strings.Join(strings.Fields(b.String()), " ")
		}
		if n.Type == html.ElementNode && (n.DataAtom == atom.Body || n.DataAtom == atom.Svg) {
			return ""
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if t := walk(c); t != "" {
				return t
			}
		}
		return ""
	}
	return walk(doc)
}

// textLen counts non-space text bytes under n, stopping at limit.
func textLen(n *html.Node, limit int) int {
	total := 0
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if total >= limit {
			return
		}
		if n.Type == html.TextNode {
			total += len(strings.TrimSpace(n.Data))
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return total
}

func findBody(doc *html.Node) *html.Node {
	var found *html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if found != nil {
			return
		}
		if n.Type == html.ElementNode && n.DataAtom == atom.Body {
			found = n
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if found == nil {
		return doc
	}
	return found
}

// chrome is page furniture dropped when the whole body is converted.
var chromeRoles = map[string]bool{"navigation": true, "banner": true, "contentinfo": true, "search": true, "menu": true, "menubar": true, "complementary": true}

func removeChrome(n *html.Node) {
	removeIf(n, func(c *html.Node) bool {
		switch c.DataAtom {
		case atom.Nav, atom.Header, atom.Footer, atom.Aside:
			return true
		}
		return chromeRoles[strings.ToLower(attr(c, "role"))]
	})
}

// clean drops what never reads well as Markdown: scripts and styles (also
// removed by the converter), inline graphics, form controls, hidden
// elements and images inlined as data: URLs.
func clean(n *html.Node) {
	removeIf(n, func(c *html.Node) bool {
		switch c.DataAtom {
		case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Svg, atom.Canvas,
			atom.Button, atom.Form, atom.Select, atom.Input, atom.Textarea, atom.Dialog, atom.Iframe, atom.Object, atom.Embed:
			return true
		case atom.Img:
			src := strings.TrimSpace(attr(c, "src"))
			return src == "" || strings.HasPrefix(strings.ToLower(src), "data:")
		}
		if _, hidden := attrOK(c, "hidden"); hidden {
			return true
		}
		return strings.EqualFold(attr(c, "aria-hidden"), "true")
	})
}

func removeIf(n *html.Node, drop func(*html.Node) bool) {
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		if c.Type == html.ElementNode && drop(c) {
			n.RemoveChild(c)
		} else {
			removeIf(c, drop)
		}
		c = next
	}
}

func attr(n *html.Node, key string) string {
	v, _ := attrOK(n, key)
	return v
}

func attrOK(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}
