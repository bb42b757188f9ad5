package webtool

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/dshq/dsh/tool"
	"github.com/dshq/dsh/web"
)

// Tool names.
const (
	SearchName = "web_search"
	FetchName  = "web_fetch"
)

// Defaults of [Options].
const (
	DefaultMaxLength = 50_000
	DefaultMaxLimit  = 200_000
	DefaultCount     = 8
	DefaultMaxCount  = 20
)

// Options tune the tools. Zero fields take the defaults; the descriptions
// state the effective values.
type Options struct {
	// MaxLength is web_fetch's max_length (characters) when the model sets
	// none; MaxLengthLimit is the largest it may ask for.
	MaxLength      int
	MaxLengthLimit int
	// Count is web_search's result count when the model sets none;
	// MaxCount the largest it may ask for.
	Count    int
	MaxCount int
}

func (o Options) withDefaults() Options {
	if o.MaxLength <= 0 {
		o.MaxLength = DefaultMaxLength
	}
	if o.MaxLengthLimit <= 0 {
		o.MaxLengthLimit = DefaultMaxLimit
	}
	o.MaxLengthLimit = max(o.MaxLengthLimit, o.MaxLength)
	if o.Count <= 0 {
		o.Count = DefaultCount
	}
	if o.MaxCount <= 0 {
		o.MaxCount = DefaultMaxCount
	}
	o.MaxCount = max(o.MaxCount, o.Count)
	return o
}

// Tools returns web_search (only when svc has an available search
// provider) and web_fetch, in that order. A nil service yields no tools.
func Tools(svc *web.Service, opts Options) []tool.Tool {
	if svc == nil {
		return nil
	}
	o := opts.withDefaults()
	var out []tool.Tool
	if _, err := svc.SearchProvider(); err == nil {
		out = append(out, newSearch(svc, o))
	}
	return append(out, newFetch(svc, o))
}

// describe fills the option placeholders of an embedded description.
func describe(md string, o Options) string {
	return strings.NewReplacer(
		"{max_length}", strconv.Itoa(o.MaxLength),
		"{max_length_limit}", strconv.Itoa(o.MaxLengthLimit),
		"{count}", strconv.Itoa(o.Count),
		"{max_count}", strconv.Itoa(o.MaxCount),
	).Replace(strings.TrimSpace(md))
}

func sessionID(call tool.Call) string {
	if call.Host == nil {
		return ""
	}
	return call.Host.SessionID()
}

func encodeMeta(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}
