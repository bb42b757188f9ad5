package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
)

// TitleRunes is the length, in runes, a listing title is cut to.
const TitleRunes = 80

// Summary is the part of a listing entry derived from the log. It is folded
// event by event, so the coordinator keeps it current on every write and a
// backend can rebuild it from a log without keeping the log.
type Summary struct {
	// Title is the text of the first user prompt, whitespace collapsed and
	// cut to TitleRunes runes.
	Title string `json:"title,omitempty"`
	// LastActivity is the time (epoch ms) of the newest event, or the
	// header's createdAt for an empty log.
	LastActivity int64 `json:"lastActivity"`
	// Turns counts turn/start events.
	Turns int `json:"turns"`
	// Events is the log length (the next seq).
	Events int64 `json:"events"`
}

// Add folds events into the summary and returns the result.
func (s Summary) Add(events []session.Event) Summary {
	for _, e := range events {
		s.Events = e.Seq + 1
		if e.Time > s.LastActivity {
			s.LastActivity = e.Time
		}
		switch e.Type {
		case session.TypeTurnStart:
			s.Turns++
		case session.TypeUserMessage:
			if s.Title == "" {
				if p, err := session.Decode[session.Prompt](e); err == nil && p.Source.OrUser().Kind == llm.SourceUser {
					s.Title = Title(llm.TextOf(p.Content))
				}
			}
		}
	}
	return s
}

// Title collapses whitespace in text and cuts it to TitleRunes runes,
// marking a cut with an ellipsis.
func Title(text string) string {
	f := strings.FieldsFunc(text, unicode.IsSpace)
	t := strings.Join(f, " ")
	if utf8.RuneCountInString(t) <= TitleRunes {
		return t
	}
	n := 0
	for i := range t {
		if n == TitleRunes-1 {
			return strings.TrimRightFunc(t[:i], unicode.IsSpace) + "…"
		}
		n++
	}
	return t
}

// NewInfo returns the listing entry for a header and the events stored so
// far.
func NewInfo(h session.Header, events []session.Event) Info {
	return Info{Header: h, Summary: Summary{LastActivity: h.CreatedAt}.Add(events)}
}

// SeedCoversPrefix reports whether seed starts with prefix: it is at least
// as long and every event of prefix equals the seed's event at that index,
// payload included (JSON whitespace aside).
func SeedCoversPrefix(seed, prefix []session.Event) bool {
	if len(prefix) > len(seed) {
		return false
	}
	for i := range prefix {
		if !EventsEqual(seed[i], prefix[i]) {
			return false
		}
	}
	return true
}

// EventsEqual compares two events field by field; data is compared as JSON
// text, ignoring insignificant whitespace.
func EventsEqual(a, b session.Event) bool {
	if a.Type != b.Type || a.Seq != b.Seq || a.Time != b.Time {
		return false
	}
	if len(a.SourceEventSeqs) != len(b.SourceEventSeqs) {
		return false
	}
	for i := range a.SourceEventSeqs {
		if a.SourceEventSeqs[i] != b.SourceEventSeqs[i] {
			return false
		}
	}
	if (a.SurfaceOp == nil) != (b.SurfaceOp == nil) || a.SurfaceOp != nil && *a.SurfaceOp != *b.SurfaceOp {
		return false
	}
	if bytes.Equal(a.Data, b.Data) {
		return true
	}
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a.Data) != nil || json.Compact(&cb, b.Data) != nil {
		return false
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

// AssertSerializable checks that every event's data is a JSON value; the
// error names the first offending event's type and seq.
func AssertSerializable(events []session.Event) error {
	for _, e := range events {
		if e.Type == "" {
			return fmt.Errorf("store: event at seq %d has no type (it would read back as corruption): %w", e.Seq, ErrNotJSON)
		}
		if len(e.Data) == 0 || !json.Valid(e.Data) {
			return fmt.Errorf("store: event %q carries non-JSON-serializable data (seq %d): %w", e.Type, e.Seq, ErrNotJSON)
		}
	}
	return nil
}

// CloneEvents deep-copies events.
func CloneEvents(events []session.Event) []session.Event {
	if events == nil {
		return nil
	}
	out := make([]session.Event, len(events))
	for i, e := range events {
		out[i] = e.Clone()
	}
	return out
}
