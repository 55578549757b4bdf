// Package backoff holds the exponential backoff arithmetic of the queue.
//
// All functions are pure and safe for concurrent use.
package backoff

import "time"

// Duration returns initial * 2^(count-1), capped at max. A count of zero or
// less, or a max of zero, means no backoff and returns 0. It never overflows:
// any count large enough to pass max returns max.
func Duration(count int, initial, max time.Duration) time.Duration {
	if count <= 0 || max <= 0 || initial <= 0 {
		return 0
	}
	if initial >= max {
		return max
	}
	d := initial
	for i := 1; i < count; i++ {
		if d > max/2 {
			return max
		}
		d *= 2
	}
	return d
}

// Window is the width of the ordering windows of the unschedulable backoff
// heap when popping from backoff is on (KEP-5142).
const Window = time.Second

// WindowOf returns the start of the 1-second window that holds t, counted
// from the Unix epoch so that every queue agrees on the windows.
func WindowOf(t time.Time) int64 { return WindowOfNs(t.UnixNano()) }

// WindowOfNs is WindowOf of a time given in Unix nanoseconds.
func WindowOfNs(ns int64) int64 {
	w := int64(Window)
	if ns < 0 {
		return (ns - w + 1) / w
	}
	return ns / w
}
