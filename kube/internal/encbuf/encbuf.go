// Package encbuf holds what schedq's comparisons of protobuf encodings
// share: room in a buffer for one length-prefixed part.
package encbuf

import (
	"encoding/binary"
	"slices"
)

// Grow appends n (8 bytes, little-endian) and n bytes of room to buf,
// and returns it with where the room starts, for a generated
// MarshalToSizedBuffer of a part of size n to fill. Prefixing each part
// with its size keeps two concatenations of parts equal only if their
// parts are. O(n) when buf must grow, else O(1).
func Grow(buf []byte, n int) ([]byte, int) {
	buf = binary.LittleEndian.AppendUint64(buf, uint64(n))
	start := len(buf)
	return slices.Grow(buf, n)[:start+n], start
}
