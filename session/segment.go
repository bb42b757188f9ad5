package session

import (
	"encoding/binary"
	"math"
	"slices"
)

// segment is segmentSize consecutive events of the log. A segment still
// written to, or whose payloads are still held, keeps its events as they
// are; once released, events that keep nothing but their type and time
// (every event off the surface: streamed chunks, markers, checkpoints,
// results taken off it) are packed into a few bytes each instead of a
// whole Event (over 100), because a long session has millions of them and
// no reader needs more of them in memory: their payloads come back from
// the store like any released one. A surface op and sources are packed
// beside them (messages and results a replace took off the surface, a
// summary with its sources), and events on the surface holding a small
// payload keep it in one buffer of the segment, so only events still
// holding a large payload stay whole.
// A segment is never changed once handed to a reader: Release replaces it.
type segment struct {
	ev []Event  // the events, unless packed
	pk *packing // the packed form of a released segment
}

// packing holds a released segment: for each event, the index of its type
// in types and its time; events that hold more (a large payload kept in
// memory) stay whole in full, by index. Every array is sized for what a
// released event keeps (a type index and a time, a few a step also an op
// and sources), since a long session holds one entry per event it ever
// logged: about 6 bytes an event.
type packing struct {
	first int64 // seq of the segment's first event
	back  *Session
	types []string
	// kind is the index of the event's type in types, with held set when
	// its payload is data[end[i-1]:end[i]]; whole: the event is in full,
	// at its index's position in at. end is nil when no payload is held.
	kind []uint8
	data []byte
	end  []uint32
	at   []uint8 // indexes of the events kept whole, ascending
	full []Event
	// An event's time is t0 + dt[i] (milliseconds); wide holds the times
	// instead when a segment spans more than dt can (49 days).
	t0   int64
	dt   []uint32
	wide []int64
	// The surface ops of packed events that have them: appAt are the
	// indexes of those that append (the zero op, app), opAt of the
	// others, whose ops are ops; both ascending.
	appAt []uint8
	app   SurfaceOp
	opAt  []uint8
	ops   []SurfaceOp
	// The sources of packed events that have them: srcAt are their
	// indexes, ascending; event srcAt[j]'s sources are varints in
	// srcs[srcEnd[j-1]:srcEnd[j]], each the zigzag difference from the one
	// before (the event's own seq before the first): a message's sources
	// are the chunks just before it, a byte each.
	srcAt  []uint8
	srcEnd []uint32
	srcs   []byte
}

const (
	// whole marks an event kept in full.
	whole = 255
	// held marks an event whose payload is in the packing's data; a type
	// index is below it.
	held = 128
)

// len is the number of events in the segment.
func (g segment) len() int {
	if g.pk != nil {
		return len(g.pk.kind)
	}
	return len(g.ev)
}

// at returns the segment's i-th event.
func (g segment) at(i int) Event {
	p := g.pk
	if p == nil {
		return g.ev[i]
	}
	k := p.kind[i]
	if k == whole {
		j, _ := slices.BinarySearch(p.at, uint8(i))
		return p.full[j]
	}
	e := Event{Seq: p.first + int64(i)}
	if p.wide != nil {
		e.Time = p.wide[i]
	} else {
		e.Time = p.t0 + int64(p.dt[i])
	}
	if k&held != 0 {
		start := uint32(0)
		if i > 0 {
			start = p.end[i-1]
		}
		e.Type, e.Data = p.types[k&^held], p.data[start:p.end[i]:p.end[i]]
	} else {
		e.Type, e.back = p.types[k], p.back
	}
	// An event's op and sources are shared with the packing, like its
	// payload: logged data is read-only by contract.
	if _, ok := slices.BinarySearch(p.appAt, uint8(i)); ok {
		e.SurfaceOp = &p.app
	} else if j, ok := slices.BinarySearch(p.opAt, uint8(i)); ok {
		e.SurfaceOp = &p.ops[j]
	}
	if j, ok := slices.BinarySearch(p.srcAt, uint8(i)); ok {
		start := uint32(0)
		if j > 0 {
			start = p.srcEnd[j-1]
		}
		e.SourceEventSeqs = readSources(p.srcs[start:p.srcEnd[j]], e.Seq)
	}
	return e
}

// appendSources appends srcs to b as varints of the zigzag difference of
// each from the one before (seq before the first).
func appendSources(b []byte, srcs []int64, seq int64) []byte {
	prev := seq
	for _, src := range srcs {
		b = binary.AppendVarint(b, src-prev)
		prev = src
	}
	return b
}

// readSources decodes what appendSources wrote; never nil (an empty list
// stays one).
func readSources(b []byte, seq int64) []int64 {
	n := 0
	for _, c := range b {
		if c < 0x80 {
			n++
		}
	}
	out := make([]int64, 0, n)
	prev := seq
	for len(b) > 0 {
		d, w := binary.Varint(b)
		prev += d
		out = append(out, prev)
		b = b[w:]
	}
	return out
}

// appendFrom appends the segment's events from index i on to out.
func (g segment) appendFrom(out []Event, i int) []Event {
	if g.pk == nil {
		return append(out, g.ev[i:]...)
	}
	for ; i < len(g.pk.kind); i++ {
		out = append(out, g.at(i))
	}
	return out
}

// events returns the segment's events as a slice of its own.
func (g segment) events() []Event {
	if g.pk == nil {
		return append([]Event(nil), g.ev...)
	}
	return g.appendFrom(make([]Event, 0, len(g.pk.kind)), 0)
}

// bare reports whether e holds nothing a packed segment drops: it is a
// released event with no payload.
func bare(e Event) bool {
	return e.Data == nil && e.back != nil && e.msg == nil
}

// slight reports whether e is packed with its payload: one kept (small, or
// not released yet).
func slight(e Event) bool {
	return e.Data != nil && len(e.Data) <= smallPayload && e.msg == nil
}

// pack returns the packed form of released events evs (whose first seq
// is evs[0].Seq), or evs as they are when packing saves nothing or a
// segment has more distinct types than an index holds.
func pack(evs []Event) segment {
	n, size, holds, ops, apps, withSrcs := 0, 0, 0, 0, 0, 0
	for _, e := range evs {
		switch {
		case bare(e):
			n++
		case slight(e):
			n++
			holds++
			size += len(e.Data)
		default:
			continue
		}
		switch {
		case e.SurfaceOp == nil:
		case *e.SurfaceOp == AppendOp:
			apps++
		default:
			ops++
		}
		if e.SourceEventSeqs != nil {
			withSrcs++
		}
	}
	if n < len(evs)/4 || len(evs) == 0 {
		return segment{ev: evs}
	}
	p := &packing{first: evs[0].Seq, kind: make([]uint8, len(evs)), t0: evs[0].Time}
	if holds > 0 {
		p.end, p.data = make([]uint32, len(evs)), make([]byte, 0, size)
	}
	for _, e := range evs {
		if d := e.Time - p.t0; d < 0 || d > math.MaxUint32 {
			p.wide = make([]int64, len(evs))
			break
		}
	}
	if p.wide == nil {
		p.dt = make([]uint32, len(evs))
	}
	if apps > 0 {
		p.appAt = make([]uint8, 0, apps)
	}
	if ops > 0 {
		p.opAt, p.ops = make([]uint8, 0, ops), make([]SurfaceOp, 0, ops)
	}
	if withSrcs > 0 {
		p.srcAt, p.srcEnd = make([]uint8, 0, withSrcs), make([]uint32, 0, withSrcs)
	}
	index := map[string]uint8{}
	for i, e := range evs {
		if p.wide != nil {
			p.wide[i] = e.Time
		} else {
			p.dt[i] = uint32(e.Time - p.t0)
		}
		keep := slight(e)
		if !keep && !bare(e) {
			p.kind[i] = whole
			p.at = append(p.at, uint8(i))
			p.full = append(p.full, e)
			if p.end != nil {
				p.end[i] = uint32(len(p.data))
			}
			continue
		}
		if !keep && p.back == nil {
			p.back = e.back
		}
		k, ok := index[e.Type]
		if !ok {
			if len(p.types) == held-1 { // 127|held would read as whole
				return segment{ev: evs}
			}
			k = uint8(len(p.types))
			index[e.Type] = k
			p.types = append(p.types, e.Type)
		}
		if keep {
			p.data = append(p.data, e.Data...)
			k |= held
		}
		p.kind[i] = k
		if p.end != nil {
			p.end[i] = uint32(len(p.data))
		}
		switch {
		case e.SurfaceOp == nil:
		case *e.SurfaceOp == AppendOp:
			p.appAt = append(p.appAt, uint8(i))
		default:
			p.opAt, p.ops = append(p.opAt, uint8(i)), append(p.ops, *e.SurfaceOp)
		}
		if e.SourceEventSeqs != nil {
			p.srcs = appendSources(p.srcs, e.SourceEventSeqs, e.Seq)
			p.srcAt, p.srcEnd = append(p.srcAt, uint8(i)), append(p.srcEnd, uint32(len(p.srcs)))
		}
	}
	p.srcs = slices.Clip(p.srcs)
	return segment{pk: p}
}
