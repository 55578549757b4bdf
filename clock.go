package schedq

import "time"

// Clock is the time source of Queue. Core never reads a clock: it takes now
// as an argument. k8s.io/utils/clock's Clock and its fake satisfy Clock.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
