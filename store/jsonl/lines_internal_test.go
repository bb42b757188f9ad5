package jsonl

import "testing"

// The line index gives back every offset added, across blocks and past
// what 32 bits of a block's offset hold (a block of huge lines).
func TestLinesGiveBackEveryOffset(t *testing.T) {
	var offs []int64
	o := int64(0)
	for i := range 3 * lineBlock {
		offs = append(offs, o)
		switch {
		case i == lineBlock+7:
			o += 5 << 30 // a 5 GiB line
		default:
			o += int64(100 + i%37)
		}
	}
	x := linesOf(offs[:10], 0)
	for _, o := range offs[10:] {
		x.add(o)
	}
	if x.len() != len(offs) {
		t.Fatalf("len %d; want %d", x.len(), len(offs))
	}
	for i, want := range offs {
		if got := x.at(i); got != want {
			t.Fatalf("line %d at %d; want %d", i, got, want)
		}
	}
	if y := linesOf(offs, 1000); y.at(len(offs)-1) != offs[len(offs)-1]+1000 || y.at(0) != 1000 {
		t.Fatalf("linesOf with a base: first %d, last %d", y.at(0), y.at(len(offs)-1))
	}
	if n := len(x.wide); n == 0 || n > lineBlock {
		t.Fatalf("%d offsets held wide; want those of the block after the huge line only", n)
	}
}
