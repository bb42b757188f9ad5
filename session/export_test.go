package session

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
