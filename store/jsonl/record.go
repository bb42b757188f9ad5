package jsonl

import (
	"encoding/json"

	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store/internal/eventjson"
)

// Index records are read on every listing, so like events they have a fast
// decoder for the shape json.Marshal writes, falling back to encoding/json
// for anything else.

func parseRecord(line []byte) (record, bool) {
	if r, ok := fastRecord(line); ok {
		return r, true
	}
	var r record
	if json.Unmarshal(line, &r) != nil || r.File == "" {
		return record{}, false
	}
	return r, true
}

func fastRecord(line []byte) (record, bool) {
	var r record
	l := eventjson.Lexer{B: line}
	var ok bool
	integer := func(p *int64) bool { *p, ok = l.Integer(); return ok }
	ok = l.Object(func(key []byte) bool {
		switch string(key) {
		case "file":
			r.File, ok = l.Str()
			return ok
		case "size":
			return integer(&r.Size)
		case "committed":
			return integer(&r.Committed)
		case "skip":
			r.Skip, ok = l.Boolean()
			return ok
		case "title":
			r.Title, ok = l.Str()
			return ok
		case "lastActivity":
			return integer(&r.LastActivity)
		case "turns":
			var n int64
			if !integer(&n) {
				return false
			}
			r.Turns = int(n)
			return true
		case "events":
			return integer(&r.Events)
		case "header":
			h := &r.Header
			return l.Object(func(key []byte) bool {
				var n int64
				switch string(key) {
				case "version":
					if !integer(&n) {
						return false
					}
					h.Version = int(n)
				case "id":
					var s string
					s, ok = l.Str()
					h.ID = session.ID(s)
					return ok
				case "createdAt":
					return integer(&h.CreatedAt)
				case "cwd":
					h.Cwd, ok = l.Str()
					return ok
				case "parentSession":
					var s string
					s, ok = l.Str()
					h.ParentSession = session.ID(s)
					return ok
				case "seedLength":
					if !integer(&n) {
						return false
					}
					h.SeedLength = int(n)
				default:
					return false
				}
				return true
			})
		}
		return false
	})
	if !ok || l.I != len(line) || r.File == "" {
		return record{}, false
	}
	return r, true
}
