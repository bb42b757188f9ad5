// Package uuid makes random (version 4) UUIDs, the form of the ids dsh
// gives sessions and runs: ACP clients and the Claude Agent SDK expect
// session ids in this shape, and one generator keeps every front door's
// ids alike.
package uuid

import (
	"crypto/rand"
	"encoding/hex"
)

// New returns a random UUID in its canonical text form
// (xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx).
func New() string {
	var b [16]byte
	_, _ = rand.Read(b[:])  // never fails: crypto/rand panics instead
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 9562 variant
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
