package fetch

import (
	"strings"
	"testing"
)

func toMarkdown(t *testing.T, page string) Document {
	t.Helper()
	d, err := HTMLToMarkdown([]byte(page), nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var prose3 = strings.Repeat("This sentence is part of the article, and it goes on for a while to look like prose. ", 3)

// The article is found under layers of wrappers beside a sidebar full of
// links, as on encyclopedia and documentation pages that use divs, not
// <article> or <main>.
func TestMainContentAmongDivs(t *testing.T) {
	page := `<html><body><div id="page"><div class="links-column">` + strings.Repeat(`<div><a href="/a">A link to elsewhere on the site</a></div>`, 30) +
		`</div><div id="bodyContent"><div class="parser-output"><h2>History</h2><p>First paragraph. ` + prose3 + `</p><p>Second paragraph. ` + prose3 +
		`</p><h2>Later</h2><p>Third paragraph. ` + prose3 + `</p></div></div></div></body></html>`
	d := toMarkdown(t, page)
	if !d.Readable {
		t.Fatalf("not extracted:\n%s", d.Markdown)
	}
	contains(t, d.Markdown, "## History", "First paragraph.", "Second paragraph.", "## Later", "Third paragraph.")
	lacks(t, d.Markdown, "A link to elsewhere")
}

// Class words of page furniture drop containers, never inline elements:
// a highlighted code block's comment spans stay, and so does a container
// whose name only contains such a word ("unavailable" holds "nav").
func TestFurnitureWordsDropOnlyContainers(t *testing.T) {
	page := `<html><body><div class="share-buttons"><p>Share this on every network you know, please, right now, today.</p></div>
<article><p>Intro paragraph. ` + prose3 + `</p><pre><code class="language-go">x := 1 <span class="comment">// the comment stays</span></code></pre>
<div class="unavailable-note"><p>Kept note. ` + prose3 + `</p></div><div class="related-posts"><ul><li><a href="/r">Related post</a></li></ul></div></article></body></html>`
	d := toMarkdown(t, page)
	if !d.Readable {
		t.Fatalf("not extracted:\n%s", d.Markdown)
	}
	contains(t, d.Markdown, "Intro paragraph.", "x := 1 // the comment stays", "Kept note.")
	lacks(t, d.Markdown, "Share this", "Related post")
}

// An article written as sibling paragraphs straight under the body's
// wrapper keeps all of them, not only the best-scored container.
func TestMainContentKeepsProseSiblings(t *testing.T) {
	page := `<html><body><div class="wrap"><p>Lead paragraph outside the container. ` + prose3 + `</p><div class="entry"><p>One. ` + prose3 +
		`</p><p>Two. ` + prose3 + `</p></div><p>Closing paragraph outside it too. ` + prose3 + `</p><p><a href="/next">Next</a> · <a href="/prev">Previous</a></p></div></body></html>`
	d := toMarkdown(t, page)
	contains(t, d.Markdown, "Lead paragraph", "One.", "Two.", "Closing paragraph")
	lacks(t, d.Markdown, "Previous")
}

// A page whose wrapper is named like furniture ("has-sidebar") loses its
// article on the first attempt and finds it on the second, without the
// names; what is styled invisible never counts or shows.
func TestMainContentSecondAttemptWithoutNames(t *testing.T) {
	page := `<html><body><div class="page has-sidebar"><div class="column"><p>First. ` + prose3 + `</p><p>Second. ` + prose3 +
		`</p><div style="display: none">Invisible words of a hidden block, ` + prose3 + `</div></div></div><nav><a href="/">Home</a></nav></body></html>`
	d := toMarkdown(t, page)
	if !d.Readable {
		t.Fatalf("not extracted:\n%s", d.Markdown)
	}
	contains(t, d.Markdown, "First.", "Second.")
	lacks(t, d.Markdown, "Home", "Invisible words")
}
