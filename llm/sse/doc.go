// Package sse is the wire layer shared by dsh's HTTP model adapters: a
// server-sent-events parser ([Reader]) and a streaming HTTP client
// ([Client]) that owns everything a provider adapter should not have to
// reimplement — a connect timeout and an idle-stream timeout, retries with
// exponential backoff and jitter (honouring Retry-After) for rate limits,
// server errors and dropped connections before anything was streamed,
// immediate cancellation, gzip bodies, sniffing of non-stream responses, and
// the mapping of every failure to an [llm.Error] that names the provider.
//
// The provider-specific part is a [Decoder]: it turns events into chunks and
// says when the provider's end-of-stream marker arrived. Decoders read event
// payloads with [JSONScanner], a validating, reflection-free JSON walker
// that keeps the streaming path at about one allocation per chunk (see
// docs/bench/llm.md).
package sse
