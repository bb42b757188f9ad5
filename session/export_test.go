package session

import "unsafe"

// Packed counts the events held packed (type and time only) and those
// held whole in the session's packed segments.
func (s *Session) Packed() (packed, whole int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.segs {
		if g.pk != nil {
			whole += len(g.pk.full)
			packed += len(g.pk.kind) - len(g.pk.full)
		}
	}
	return packed, whole
}

// Held counts what the session's released segments hold: the bytes of
// payloads still in memory (packed small ones and those of events kept
// whole), and the bytes of the skeleton that stands for the events (the
// packed arrays: types, times, payload ends, ops, sources).
func (s *Session) Held() (payload, skeleton int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.segs[:s.released] {
		p := g.pk
		if p == nil {
			for _, e := range g.ev {
				payload += len(e.Data)
				skeleton += int(unsafe.Sizeof(e)) + 8*len(e.SourceEventSeqs)
			}
			continue
		}
		payload += len(p.data)
		for _, e := range p.full {
			payload += len(e.Data)
			skeleton += int(unsafe.Sizeof(e)) + 8*len(e.SourceEventSeqs)
		}
		skeleton += len(p.kind) + 4*len(p.dt) + 8*len(p.wide) + 4*len(p.end) + len(p.at) + len(p.appAt) + len(p.opAt) +
			int(unsafe.Sizeof(SurfaceOp{}))*len(p.ops) + len(p.srcAt) + 4*len(p.srcEnd) + cap(p.srcs)
	}
	return payload, skeleton
}
