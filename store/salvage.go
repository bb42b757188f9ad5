package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/dshq/dsh/session"
)

// Salvager is a [Backend] that can read a damaged log past its damage, for
// `dsh sessions export --salvage`. Load refuses a log whose committed part
// is unreadable (resuming it would build on a history with holes); salvage
// is the way out: every event that can still be read, and where the damage
// is, so nothing readable is lost with the unreadable part.
type Salvager interface {
	Salvage(ctx context.Context, id session.ID) (*Salvaged, error)
}

// Salvaged is what could be read of one stored log.
type Salvaged struct {
	// Header is the log's header; when it was unreadable, only its ID is
	// known and HeaderDamaged is set.
	Header        session.Header
	HeaderDamaged bool
	// Events are every readable event, in storage order (seqs may skip
	// where events were lost).
	Events []session.Event
	// Damage lists the unreadable ranges in storage order; empty for an
	// intact log.
	Damage []Damage
}

// Damage is one unreadable range of a log.
type Damage struct {
	Path string
	// FirstLine and LastLine are 1-based lines of a JSONL log (0 when the
	// storage has no lines); Offset and Size the bytes they span.
	FirstLine, LastLine int
	Offset, Size        int64
	// FirstSeq and LastSeq are the event seqs lost (-1 when unknown; a
	// LastSeq of -1 after a known FirstSeq: everything from FirstSeq on).
	FirstSeq, LastSeq int64
	Detail            string
}

func (d Damage) String() string {
	var where []string
	switch {
	case d.FirstLine > 0 && d.LastLine > d.FirstLine:
		where = append(where, fmt.Sprintf("lines %d-%d", d.FirstLine, d.LastLine))
	case d.FirstLine > 0:
		where = append(where, fmt.Sprintf("line %d", d.FirstLine))
	}
	if d.Size > 0 {
		where = append(where, fmt.Sprintf("bytes %d-%d", d.Offset, d.Offset+d.Size-1))
	}
	switch {
	case d.FirstSeq >= 0 && d.LastSeq < 0:
		where = append(where, fmt.Sprintf("seq %d and after", d.FirstSeq))
	case d.FirstSeq >= 0 && d.LastSeq > d.FirstSeq:
		where = append(where, fmt.Sprintf("seq %d-%d", d.FirstSeq, d.LastSeq))
	case d.FirstSeq >= 0:
		where = append(where, fmt.Sprintf("seq %d", d.FirstSeq))
	}
	s := strings.Join(where, ", ")
	if d.Path != "" {
		s = d.Path + ": " + s
	}
	return s + ": " + d.Detail
}

// Salvage reads every readable event of a stored log, damaged or not, with
// the damaged ranges. Like Read it takes no lock and repairs nothing.
func (c *Coordinator) Salvage(ctx context.Context, id session.ID) (*Salvaged, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	s, ok := c.backend.(Salvager)
	if !ok {
		return nil, fmt.Errorf("store: %s cannot salvage damaged logs", c.backend.Name())
	}
	return s.Salvage(ctx, id)
}
