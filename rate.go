package schedq

import "time"

// rateWindow is how many recent pops the pop rate is measured over.
const rateWindow = 128

// popRate remembers the times of the latest pops, in a ring, to estimate
// the recent pop rate. It never allocates.
type popRate struct {
	at   [rateWindow]int64 // Unix ns
	n    int               // pops recorded, up to rateWindow
	next int               // where the next pop goes
}

// add records a pop at now (Unix ns). O(1).
func (r *popRate) add(now int64) {
	r.at[r.next] = now
	r.next = (r.next + 1) % rateWindow
	r.n = min(r.n+1, rateWindow)
}

// perSecond estimates the recent pop rate at now: the pops remembered
// over the time from the oldest of them to now. ok is false with fewer
// than two pops, or none of that time elapsed. O(1).
func (r *popRate) perSecond(now time.Time) (rate float64, ok bool) {
	if r.n < 2 {
		return 0, false
	}
	oldest := r.at[(r.next-r.n+rateWindow)%rateWindow]
	span := now.UnixNano() - oldest
	if span <= 0 {
		return 0, false
	}
	return float64(r.n-1) / (float64(span) / float64(time.Second)), true
}
