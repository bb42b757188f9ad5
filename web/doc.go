// Package web is dsh's web capability seam: the vocabulary of web search and
// web fetch, registries of providers for each, provider selection, a
// per-session fetch cache and one error taxonomy.
//
// Providers live in sub-packages (web/fetch is the local HTTP fetcher,
// web/search/... the search APIs) and are registered into a [Service];
// web/providers builds the default service from settings and the
// environment. The model-facing tools (tools/webtool) talk only to the
// Service.
//
// Selection never depends on registration order: a configured provider id
// wins (and is an error when it is missing or unavailable, never a silent
// fallback); without one, the first available provider in the service's
// preference order is used, then the remaining available ones by id.
//
// Every failure a provider or the service reports is an [*llm.Error] named
// "WebError" whose Code is one of the Code constants, so tool results record
// error.name and error.code and callers can branch on [llm.CodeOf].
package web
