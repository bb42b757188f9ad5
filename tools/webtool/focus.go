package webtool

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// section is a heading and the Markdown under it (up to the next heading
// of any level).
type section struct {
	heading string
	text    string
	chars   int
	score   float64
}

// minFocusChars is the least room worth filling with the start of a
// section that does not fit whole.
const minFocusChars = 200

// selection is what focus kept.
type selection struct {
	text        string
	chars       int
	kept, total int
	omitted     string
}

// focus picks the sections of md most relevant to prompt that fit in limit
// characters, keeping document order and marking the gaps. It reports
// false when nothing matches the prompt (the caller then just cuts).
// Relevance is plain term overlap: prompt words (3+ letters, minus common
// words) counted in each section, headings weighted more.
func focus(md, prompt string, limit int) (selection, bool) {
	terms := promptTerms(prompt)
	secs := splitSections(md)
	if len(terms) == 0 || len(secs) < 2 {
		return selection{}, false
	}
	for i := range secs {
		s := &secs[i]
		body := strings.ToLower(s.text)
		head := strings.ToLower(s.heading)
		for _, t := range terms {
			n := min(strings.Count(body, t), 10)
			s.score += float64(n) + 3*float64(strings.Count(head, t))
		}
		// Prefer dense matches over long sections that mention a term once.
		if s.score > 0 {
			s.score /= 1 + float64(s.chars)/4000
		}
	}
	order := make([]int, len(secs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return secs[order[a]].score > secs[order[b]].score })
	if secs[order[0]].score == 0 {
		return selection{}, false
	}
	const gap = "\n\n[…]\n\n"
	budget := limit
	keep := make([]bool, len(secs))
	// The preamble (title, summary) anchors the page when it is short.
	if secs[0].heading == "" && secs[0].chars <= limit/5 {
		keep[0] = true
		budget -= secs[0].chars
	}
	for _, i := range order {
		s := secs[i]
		if s.score == 0 || keep[i] {
			continue
		}
		if cost := s.chars + len(gap); cost <= budget {
			keep[i] = true
			budget -= cost
		}
	}
	// The best section alone may not fit: keep its beginning.
	best := order[0]
	if !keep[best] && budget-len(gap) >= minFocusChars {
		secs[best].text = cut(secs[best].text, budget-len(gap))
		keep[best] = true
	}
	var parts []string
	var omitted []string
	kept := 0
	prev := -1
	for i, s := range secs {
		if !keep[i] {
			if s.heading != "" {
				omitted = append(omitted, strconv.Quote(strings.TrimLeft(s.heading, "# ")))
			}
			continue
		}
		if prev >= 0 && i != prev+1 || prev < 0 && i > 0 {
			parts = append(parts, "[…]")
		}
		parts = append(parts, strings.TrimSpace(s.text))
		prev = i
		kept++
	}
	if kept == 0 || kept == 1 && keep[0] && secs[0].score == 0 {
		return selection{}, false
	}
	if prev < len(secs)-1 {
		parts = append(parts, "[…]")
	}
	text := strings.Join(parts, "\n\n")
	sel := selection{text: text, chars: utf8.RuneCountInString(text), kept: kept, total: len(secs)}
	const maxListed = 12
	if len(omitted) > maxListed {
		sel.omitted = strings.Join(omitted[:maxListed], ", ") + fmt.Sprintf(" and %d more", len(omitted)-maxListed)
	} else if len(omitted) > 0 {
		sel.omitted = strings.Join(omitted, ", ")
	} else {
		sel.omitted = "only untitled text"
	}
	return sel, true
}

// splitSections splits Markdown at ATX headings outside code fences.
func splitSections(md string) []section {
	var secs []section
	var cur strings.Builder
	heading := ""
	flush := func() {
		t := cur.String()
		if strings.TrimSpace(t) != "" || heading != "" {
			secs = append(secs, section{heading: heading, text: t, chars: utf8.RuneCountInString(t)})
		}
		cur.Reset()
	}
	fence := false
	for _, line := range strings.SplitAfter(md, "\n") {
		trim := strings.TrimSpace(line)
		if strings.HasPrefix(trim, "```") {
			fence = !fence
		}
		if !fence && isHeading(trim) {
			flush()
			heading = trim
		}
		cur.WriteString(line)
	}
	flush()
	return secs
}

func isHeading(line string) bool {
	n := 0
	for n < len(line) && line[n] == '#' {
		n++
	}
	return n >= 1 && n <= 6 && len(line) > n && line[n] == ' '
}

var stopwords = map[string]bool{
	"the": true, "and": true, "for": true, "are": true, "but": true, "not": true, "you": true, "all": true,
	"any": true, "can": true, "how": true, "what": true, "when": true, "where": true, "which": true, "who": true,
	"why": true, "with": true, "this": true, "that": true, "from": true, "about": true, "into": true, "does": true,
	"have": true, "has": true, "was": true, "were": true, "will": true, "would": true, "should": true, "could": true,
	"there": true, "their": true, "them": true, "then": true, "than": true, "these": true, "those": true, "its": true,
	"page": true, "find": true, "show": true, "tell": true, "get": true, "use": true, "used": true, "using": true,
	"information": true, "please": true, "section": true, "explain": true, "describe": true, "list": true,
}

// promptTerms returns the distinct lower-case words of prompt worth
// matching.
func promptTerms(prompt string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(prompt), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '-' && r != '.'
	}) {
		w = strings.Trim(w, "-.")
		if utf8.RuneCountInString(w) < 3 || stopwords[w] || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	return out
}
