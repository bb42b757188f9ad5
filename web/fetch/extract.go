package fetch

import (
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// mainContent finds the part of a page that is its article: the element
// under which the page's paragraphs carry the most text, discounted by how
// much of that text is links, with the siblings that read as part of it.
// It returns nil when nothing stands out; the caller then converts the
// whole body. It mutates body (drops what is unlikely to be content and
// may move the chosen siblings under a new element).
//
// dsh extracts the article itself instead of using go-readability, whose
// package initialisation (28 regular expressions and its DOM helpers'
// charset tables) ran at every dsh start, for a tool few runs call
// (issue 25). The scoring is deliberately simple: paragraphs vote for
// their parent and, less, for their grandparent; class and id names that
// say "content" or "chrome" move the vote; the best-scored element wins.
func mainContent(body *html.Node, byName bool) *html.Node {
	dropUnlikely(body, byName)
	scores := map[*html.Node]float64{}
	var order []*html.Node // candidates in document order, for stable ties
	vote := func(n *html.Node, s float64) {
		if n == nil || n.Type != html.ElementNode {
			return
		}
		if _, ok := scores[n]; !ok {
			scores[n] = tagWeight(n) + classWeight(n)
			order = append(order, n)
		}
		scores[n] += s
	}
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			if paragraphLike(c) {
				text := innerText(c)
				if len(text) >= 25 {
					s := 1 + float64(strings.Count(text, ",")) + min(float64(len(text))/100, 3)
					// The paragraph's container gets the whole vote, the
					// levels above a shrinking share of it.
					level := 0
					for a := c.Parent; a != nil && a != body && level < 5; a, level = a.Parent, level+1 {
						vote(a, s/max(float64(level)*3, float64(level+1)))
					}
				}
				continue
			}
			walk(c)
		}
	}
	walk(body)
	var top *html.Node
	best := 0.0
	for _, n := range order {
		if n == body || n.DataAtom == atom.Html {
			continue
		}
		s := scores[n] * (1 - linkDensity(n))
		scores[n] = s
		if top == nil || s > best {
			top, best = n, s
		}
	}
	if top == nil || best <= 0 {
		return nil
	}
	// Several near-best candidates under one ancestor are sections of one
	// article (steps, chapters): take the ancestor holding three of them.
	var near []*html.Node
	for _, n := range order {
		if n != top && scores[n] >= best*0.75 {
			near = append(near, n)
		}
	}
	if len(near) >= 2 {
		for a := top.Parent; a != nil && a != body; a = a.Parent {
			count := 1
			for _, n := range near {
				if isUnder(n, a) {
					count++
				}
			}
			if count >= 3 {
				top = a
				best = max(best, scores[a])
				break
			}
		}
	}
	// A lone child carries its parent's content: climb while the parent
	// holds nothing else. A parent that scores better than its best child
	// (the child was one section of several) is the article; climbing
	// stops where the scores fall below a third.
	last := best
	for p := top.Parent; p != nil && p != body; p = p.Parent {
		if onlyElementChild(top) {
			top = p
			continue
		}
		ps, ok := scores[p]
		if !ok {
			continue
		}
		if ps < best/3 {
			break
		}
		if ps > last {
			top = p
			best = ps
			break
		}
		last = ps
	}
	return withSiblings(top, best, scores)
}

// withSiblings gathers top and the siblings that belong with it: scored
// nearly as well, or paragraphs of prose with few links (an article split
// into several containers, a lead paragraph outside the main one).
func withSiblings(top *html.Node, best float64, scores map[*html.Node]float64) *html.Node {
	parent := top.Parent
	if parent == nil {
		return top
	}
	threshold := max(10, best*0.2)
	var keep []*html.Node
	for c := parent.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode {
			continue
		}
		switch {
		case c == top:
		case scores[c] >= threshold:
		case c.DataAtom == atom.P:
			text := innerText(c)
			if !(len(text) > 80 && linkDensity(c) < 0.25) && !(len(text) > 0 && linkDensity(c) == 0 && strings.ContainsAny(text, ".!?")) {
				continue
			}
		default:
			continue
		}
		keep = append(keep, c)
	}
	if len(keep) == 1 {
		return top
	}
	wrap := &html.Node{Type: html.ElementNode, DataAtom: atom.Div, Data: "div"}
	for _, c := range keep {
		parent.RemoveChild(c)
		wrap.AppendChild(c)
	}
	return wrap
}

// prose says whether paragraph p reads as text, not a row of links: long
// with few links, or a sentence with none.
func prose(p *html.Node) bool {
	text, links := innerText(p), linkDensity(p)
	return len(text) > 80 && links < 0.25 || links == 0 && strings.ContainsAny(text, ".!?")
}

// byName also drops containers by their class and id words (the first
// attempt; a page whose wrapper is named like furniture gets a second one
// without).
//
// dropUnlikely removes what a reader does not see (scripts and styles would
// otherwise count as text) and what is page furniture, not article: navigation,
// asides, footers, dialogs and elements whose class or id say so (and say
// nothing of content). A header inside an article (its title) stays.
func dropUnlikely(n *html.Node, byName bool) {
	removeIf(n, func(c *html.Node) bool {
		if invisible(c) {
			return true
		}
		switch c.DataAtom {
		case atom.Nav, atom.Aside, atom.Footer, atom.Menu:
			return true
		case atom.Header:
			return !within(c, atom.Article)
		case atom.Div, atom.Section, atom.Ul, atom.Ol, atom.Dl, atom.Table, atom.Form, atom.Figure:
		default:
			// Inline elements and prose keep their classes' words to
			// themselves: a code block's <span class="comment"> is code.
			return chromeRoles[strings.ToLower(attr(c, "role"))]
		}
		if chromeRoles[strings.ToLower(attr(c, "role"))] {
			return true
		}
		names := classAndID(c)
		return byName && names != "" && containsAny(names, unlikelyNames) && !containsAny(names, keepNames)
	})
}

// Words in class and id names. unlikelyNames mark furniture worth
// dropping outright, unless a keepNames word is there too ("related-posts"
// goes, "article-comments-count" stays); chromeNames lower a candidate's
// score; contentNames raise it.
var (
	unlikelyNames = []string{"banner", "breadcrumb", "comment", "cookie", "disqus", "footer", "masthead",
		"menu", "modal", "newsletter", "pagination", "popup", "related", "share", "sharing", "sidebar",
		"social", "sponsor", "subscribe", "advert", "promo", "skip-link", "navbar", "navigation"}
	chromeNames = []string{"hidden", "banner", "comment", "contact", "foot", "masthead", "meta",
		"promo", "related", "share", "sidebar", "sponsor", "shopping", "tags", "tool", "widget", "advert"}
	keepNames    = []string{"article", "content", "main", "body"}
	contentNames = []string{"article", "body", "content", "entry", "main", "post", "text", "blog", "story", "prose"}
)

func classAndID(n *html.Node) string {
	return strings.ToLower(attr(n, "class") + " " + attr(n, "id"))
}

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

func classWeight(n *html.Node) float64 {
	names := classAndID(n)
	w := 0.0
	if containsAny(names, chromeNames) {
		w -= 25
	}
	if containsAny(names, contentNames) {
		w += 25
	}
	return w
}

// tagWeight is a candidate's starting score by what its element usually
// holds: containers of prose gain, lists and headings lose.
func tagWeight(n *html.Node) float64 {
	switch n.DataAtom {
	case atom.Article, atom.Main:
		return 10
	case atom.Div, atom.Section:
		return 5
	case atom.Pre, atom.Td, atom.Blockquote:
		return 3
	case atom.Address, atom.Ol, atom.Ul, atom.Dl, atom.Dd, atom.Dt, atom.Li, atom.Form:
		return -3
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6, atom.Th:
		return -5
	}
	return 0
}

// paragraphLike says whether n is a unit of prose that votes: a paragraph,
// preformatted block or table cell, or a div with no block children (many
// pages write paragraphs as bare divs).
func paragraphLike(n *html.Node) bool {
	switch n.DataAtom {
	case atom.P, atom.Pre, atom.Td:
		return true
	case atom.Div:
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode && blockElement(c) {
				return false
			}
		}
		return true
	}
	return false
}

func blockElement(n *html.Node) bool {
	switch n.DataAtom {
	case atom.Address, atom.Article, atom.Aside, atom.Blockquote, atom.Dl, atom.Div, atom.Figure, atom.Footer,
		atom.Form, atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6, atom.Header, atom.Hr, atom.Main,
		atom.Nav, atom.Ol, atom.P, atom.Pre, atom.Section, atom.Table, atom.Ul:
		return true
	}
	return false
}

// innerText is n's text, whitespace runs collapsed to one space.
func innerText(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
			b.WriteByte(' ')
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

// linkDensity is the share of n's text that sits inside links.
func linkDensity(n *html.Node) float64 {
	all, linked := 0, 0
	var walk func(*html.Node, bool)
	walk = func(n *html.Node, inLink bool) {
		if n.Type == html.TextNode {
			l := len(strings.TrimSpace(n.Data))
			all += l
			if inLink {
				linked += l
			}
			return
		}
		inLink = inLink || n.DataAtom == atom.A
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, inLink)
		}
	}
	walk(n, false)
	if all == 0 {
		return 0
	}
	return float64(linked) / float64(all)
}

func onlyElementChild(n *html.Node) bool {
	for c := n.Parent.FirstChild; c != nil; c = c.NextSibling {
		if c == n {
			continue
		}
		if c.Type == html.ElementNode || (c.Type == html.TextNode && strings.TrimSpace(c.Data) != "") {
			return false
		}
	}
	return true
}

// isUnder says whether n is under a.
func isUnder(n, a *html.Node) bool {
	for p := n.Parent; p != nil; p = p.Parent {
		if p == a {
			return true
		}
	}
	return false
}

func within(n *html.Node, a atom.Atom) bool {
	for p := n.Parent; p != nil; p = p.Parent {
		if p.DataAtom == a {
			return true
		}
	}
	return false
}
