package web

import (
	"context"
	"time"
)

// SearchRequest is one web search.
type SearchRequest struct {
	Query string
	// Count is how many sources the caller wants; 0 means the provider's
	// default. The service cuts longer answers to Count.
	Count int
	// AllowedDomains, when set, restricts sources to these domains and
	// their subdomains; BlockedDomains excludes them. Providers that can
	// filter natively do; the service filters every answer again.
	AllowedDomains []string
	BlockedDomains []string
}

// SearchResult is a provider's answer.
type SearchResult struct {
	// Provider is the id of the provider that answered.
	Provider string
	Query    string
	// Answer is a generated summary, for providers that give one
	// (Perplexity); empty otherwise.
	Answer  string
	Sources []Source
	// Truncated says the service dropped sources beyond the request's
	// Count.
	Truncated bool
}

// Source is one search hit. URL is always set; the other fields are empty
// when the provider did not give them (never invented).
type Source struct {
	URL       string `json:"url"`
	Title     string `json:"title,omitempty"`
	Snippet   string `json:"snippet,omitempty"`
	Published string `json:"published,omitempty"`
}

// FetchRequest is one page fetch.
type FetchRequest struct {
	URL string
	// Timeout overrides the provider's default (and is capped by its
	// maximum); 0 means the default.
	Timeout time.Duration
	// SessionID scopes the service's cache: results are reused only within
	// one session.
	SessionID string
	// NoCache skips the cache for this request (the fresh result is still
	// stored).
	NoCache bool
}

// Content formats of a [FetchResult].
const (
	FormatMarkdown = "markdown" // HTML converted to Markdown, or a Markdown document
	FormatText     = "text"     // plain text passed through
	FormatJSON     = "json"     // JSON passed through
)

// FetchResult is a fetched page, decoded to text.
type FetchResult struct {
	// Provider is the id of the provider that fetched it.
	Provider string
	// URL is the requested URL; FinalURL the one that answered, after
	// redirects.
	URL      string
	FinalURL string
	Status   int
	// ContentType is the response's media type, without parameters.
	ContentType string
	// Title is the document title when there is one.
	Title string
	// Content is the page as Markdown, or the text or JSON body.
	Content string
	Format  string
	// Bytes is how many body bytes were read.
	Bytes int64
	// Truncated says the body was cut at the provider's size limit, so
	// Content is only the start of the page.
	Truncated bool
	// FetchedAt is when the provider fetched the page; Cached says the
	// service answered from its cache.
	FetchedAt time.Time
	Cached    bool
}

// SearchProvider answers web searches.
type SearchProvider interface {
	// ID is the provider's stable name ("exa"), the value settings use to
	// pin it.
	ID() string
	// Available reports, without touching the network, whether the
	// provider can serve requests: nil, or why not ("EXA_API_KEY is not
	// set").
	Available() error
	Search(ctx context.Context, req SearchRequest) (*SearchResult, error)
}

// FetchProvider fetches pages.
type FetchProvider interface {
	ID() string
	Available() error
	Fetch(ctx context.Context, req FetchRequest) (*FetchResult, error)
}
