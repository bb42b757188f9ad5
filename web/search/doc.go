// Package search holds dsh's web search providers, one sub-package per
// API: exa, brave, searxng, perplexity and deepseek. Each implements
// [web.SearchProvider], reads its credential from its Config (filled from
// settings or the environment by web/providers), takes an overridable base
// URL and maps the API's error responses into the web error taxonomy
// (401/403 → PROVIDER_UNAVAILABLE, 429 → RATE_LIMITED with Retry-After,
// other statuses → HTTP_STATUS, unreadable bodies and transport failures →
// PROVIDER_ERROR, deadlines → TIMEOUT, cancellation → ABORTED).
package search
