package schedq

import "unsafe"

// sameValue reports whether *a and *b hold the same bits: for a pointer,
// the same pointer. Equal bits are the same argument to a pure callback,
// so its answer for one holds for the other; unequal bits (padding
// included) may still be equal values, which only costs a call. O(size
// of T).
func sameValue[T any](a, b *T) bool {
	n := unsafe.Sizeof(*a)
	return unsafe.String((*byte)(unsafe.Pointer(a)), n) == unsafe.String((*byte)(unsafe.Pointer(b)), n)
}
