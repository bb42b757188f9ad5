package jsonl

import "math"

// lines is the byte offset of each line of a log this process read or
// wrote, at about 4 bytes a line: an int64 for every lineBlock lines and a
// 32-bit offset from it for each. A live session appends to it at every
// flush for as long as it runs (one entry per event), so 8 bytes a line
// was, after the session's own packed skeleton, the largest thing a long
// session kept per event.
type lines struct {
	base []int64  // offset of line k*lineBlock
	rel  []uint32 // offset of line i minus its block's; far: see wide
	wide map[int]int64
}

// lineBlock is how many lines share one base offset.
const lineBlock = 256

// far marks a line more than 4 GiB past its block's first (a block of
// huge lines): its offset is in wide.
const far = math.MaxUint32

// linesOf is the index of the offsets offs, each plus add.
func linesOf(offs []int64, add int64) *lines {
	x := &lines{rel: make([]uint32, 0, len(offs)), base: make([]int64, 0, (len(offs)+lineBlock-1)/lineBlock)}
	for _, o := range offs {
		x.add(add + o)
	}
	return x
}

// add appends the offset of the next line.
func (x *lines) add(o int64) {
	i := len(x.rel)
	if i%lineBlock == 0 {
		x.base = append(x.base, o)
	}
	d := o - x.base[i/lineBlock]
	if d < 0 || d >= far {
		if x.wide == nil {
			x.wide = map[int]int64{}
		}
		x.wide[i] = o
		d = far
	}
	x.rel = append(x.rel, uint32(d))
}

// len is how many lines' offsets are known.
func (x *lines) len() int { return len(x.rel) }

// at is the offset of line i (0 <= i < len).
func (x *lines) at(i int) int64 {
	if d := x.rel[i]; d != far {
		return x.base[i/lineBlock] + int64(d)
	}
	return x.wide[i]
}
