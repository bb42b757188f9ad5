package session

import "slices"

// segment is segmentSize consecutive events of the log. A segment still
// written to, or whose payloads are still held, keeps its events as they
// are; once released, events that kept nothing but their type and time
// (streamed chunks above all, and results taken off the surface) are
// packed into 13 bytes each instead of a whole Event (over 100), because a
// long session has millions of them and no reader needs more of them in
// memory: their payloads come back from the store like any released one.
// Events that kept only a small payload (step and turn markers, tool
// calls, checkpoints: a few a step) are packed the same way with their
// payload's bytes in one buffer of the segment, so a step no longer holds
// a whole Event for each of them. A surface op and sources are packed
// beside them (messages and results taken off the surface: a few a step,
// for the life of the session), so only events still holding a large
// payload stay whole.
// A segment is never changed once handed to a reader: Release replaces it.
type segment struct {
	ev []Event  // the events, unless packed
	pk *packing // the packed form of a released segment
}

// packing holds a released segment: for each event, the index of its type
// in types and its time; events that hold more (a payload kept in memory,
// a surface op, sources) stay whole in full, by index.
type packing struct {
	first int64 // seq of the segment's first event
	back  *Session
	types []string
	// kind is the index of the event's type in types, with held set when
	// its payload is data[end[i-1]:end[i]]; whole: the event is in full,
	// at its index's position in at.
	kind []uint8
	time []int64
	data []byte
	end  []uint32
	at   []uint8 // indexes of the events kept whole, ascending
	full []Event
	// The surface ops and sources of packed events that have them: opAt
	// and srcAt are their indexes, ascending; event srcAt[j]'s sources are
	// srcs[srcEnd[j-1]:srcEnd[j]].
	opAt   []uint8
	ops    []SurfaceOp
	srcAt  []uint8
	srcEnd []uint32
	srcs   []int64
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
	e := Event{Seq: p.first + int64(i), Time: p.time[i]}
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
	if j, ok := slices.BinarySearch(p.opAt, uint8(i)); ok {
		e.SurfaceOp = &p.ops[j]
	}
	if j, ok := slices.BinarySearch(p.srcAt, uint8(i)); ok {
		start := uint32(0)
		if j > 0 {
			start = p.srcEnd[j-1]
		}
		e.SourceEventSeqs = p.srcs[start:p.srcEnd[j]:p.srcEnd[j]]
	}
	return e
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
	n, size, ops, withSrcs, srcs := 0, 0, 0, 0, 0
	for _, e := range evs {
		switch {
		case bare(e):
			n++
		case slight(e):
			n++
			size += len(e.Data)
		default:
			continue
		}
		if e.SurfaceOp != nil {
			ops++
		}
		if e.SourceEventSeqs != nil {
			withSrcs++
			srcs += len(e.SourceEventSeqs)
		}
	}
	if n < len(evs)/4 || len(evs) == 0 {
		return segment{ev: evs}
	}
	p := &packing{first: evs[0].Seq, kind: make([]uint8, len(evs)), time: make([]int64, len(evs)),
		end: make([]uint32, len(evs)), data: make([]byte, 0, size)}
	if ops > 0 {
		p.opAt, p.ops = make([]uint8, 0, ops), make([]SurfaceOp, 0, ops)
	}
	if withSrcs > 0 {
		p.srcAt, p.srcEnd = make([]uint8, 0, withSrcs), make([]uint32, 0, withSrcs)
	}
	index := map[string]uint8{}
	for i, e := range evs {
		p.time[i] = e.Time
		keep := slight(e)
		if !keep && !bare(e) {
			p.kind[i] = whole
			p.at = append(p.at, uint8(i))
			p.full = append(p.full, e)
			p.end[i] = uint32(len(p.data))
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
		p.end[i] = uint32(len(p.data))
		if e.SurfaceOp != nil {
			p.opAt, p.ops = append(p.opAt, uint8(i)), append(p.ops, *e.SurfaceOp)
		}
		if e.SourceEventSeqs != nil {
			if p.srcs == nil {
				p.srcs = make([]int64, 0, srcs) // not nil: an empty list stays one
			}
			p.srcs = append(p.srcs, e.SourceEventSeqs...)
			p.srcAt, p.srcEnd = append(p.srcAt, uint8(i)), append(p.srcEnd, uint32(len(p.srcs)))
		}
	}
	return segment{pk: p}
}
