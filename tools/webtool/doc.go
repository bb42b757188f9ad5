// Package webtool holds the model-facing web tools: web_search and
// web_fetch, thin layers over a [web.Service].
//
// web_search is offered only when the service has an available search
// provider, so a model never sees a tool that can only fail; web_fetch is
// always offered (the local fetcher needs no credential). Both are
// read-only and may run concurrently.
//
// web_fetch returns the page as Markdown headed by its final URL and
// title, cut at max_length characters with a note that says how to get
// more; an optional prompt keeps the sections most relevant to it when the
// page is too long. web_search returns numbered results as markdown links
// with their snippets and a reminder to cite sources. Failures are
// WebErrors (see package web), so results record error.code.
//
// Presenters are pure: calls render from their arguments, results from
// Result.Meta.
package webtool
