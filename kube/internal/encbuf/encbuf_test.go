package encbuf

import (
	"bytes"
	"testing"
)

// TestGrow: the room follows the part's size and starts where Grow says;
// two parts split differently do not give the same bytes.
func TestGrow(t *testing.T) {
	fill := func(parts ...string) []byte {
		var buf []byte
		for _, p := range parts {
			var start int
			buf, start = Grow(buf, len(p))
			if len(buf)-start != len(p) {
				t.Fatalf("room of %d for a part of %d", len(buf)-start, len(p))
			}
			copy(buf[start:], p)
		}
		return buf
	}
	if a, b := fill("ab", "c"), fill("a", "bc"); bytes.Equal(a, b) {
		t.Errorf("parts split differently gave the same bytes %q", a)
	}
	if a, b := fill("ab", "c"), fill("ab", "c"); !bytes.Equal(a, b) {
		t.Errorf("the same parts gave %q and %q", a, b)
	}
}
