package jsonl

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store/internal/eventjson"
)

// Events are written and read by package eventjson (shared with the SQLite
// backend); this file is the header line.

// appendHeader writes the header line (with its newline).
func appendHeader(buf []byte, h session.Header) []byte {
	buf = append(buf, `{"type":"session","version":`...)
	buf = strconv.AppendInt(buf, int64(h.Version), 10)
	buf = append(buf, `,"id":`...)
	buf = eventjson.AppendString(buf, string(h.ID))
	buf = append(buf, `,"createdAt":`...)
	buf = strconv.AppendInt(buf, h.CreatedAt, 10)
	if h.Cwd != "" {
		buf = append(buf, `,"cwd":`...)
		buf = eventjson.AppendString(buf, h.Cwd)
	}
	if h.ParentSession != "" {
		buf = append(buf, `,"parentSession":`...)
		buf = eventjson.AppendString(buf, string(h.ParentSession))
	}
	if h.SeedLength != 0 {
		buf = append(buf, `,"seedLength":`...)
		buf = strconv.AppendInt(buf, int64(h.SeedLength), 10)
	}
	return append(buf, '}', '\n')
}

// header is the first line of a log.
type header struct {
	Type          *string      `json:"type"`
	Version       *json.Number `json:"version"`
	ID            *string      `json:"id"`
	CreatedAt     *json.Number `json:"createdAt"`
	Cwd           string       `json:"cwd"`
	ParentSession string       `json:"parentSession"`
	SeedLength    json.Number  `json:"seedLength"`
}

// parseHeader decodes a header line. valid is false for JSON that is not a
// header; err is set for a line that is not JSON at all.
func parseHeader(line []byte) (h session.Header, valid bool, err error) {
	var w header
	if err := json.Unmarshal(line, &w); err != nil {
		if json.Valid(line) {
			return h, false, nil // JSON, just not a header
		}
		return h, false, err
	}
	if w.Type == nil || *w.Type != "session" || w.Version == nil || w.ID == nil || w.CreatedAt == nil {
		return h, false, nil
	}
	v, ok := wholeNumber(*w.Version)
	if !ok || v > math.MaxInt32 || v < math.MinInt32 {
		return h, false, nil
	}
	created, ok := wholeNumber(*w.CreatedAt)
	if !ok {
		return h, false, nil
	}
	h = session.Header{Version: int(v), ID: session.ID(*w.ID), CreatedAt: created, Cwd: w.Cwd, ParentSession: session.ID(w.ParentSession)}
	if w.SeedLength != "" {
		sl, ok := wholeNumber(w.SeedLength)
		if !ok || sl < 0 || sl > math.MaxInt32 {
			return h, false, nil
		}
		h.SeedLength = int(sl)
	}
	return h, true, nil
}

func wholeNumber(n json.Number) (int64, bool) {
	if i, err := n.Int64(); err == nil {
		return i, true
	}
	f, err := n.Float64()
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}
