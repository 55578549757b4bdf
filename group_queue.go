package schedq

import "time"

// SetGroup adds or updates a group object (see Core.SetGroup).
func (q *Queue[K, T]) SetGroup(name string, spec GroupSpec) error {
	return q.do(func(now time.Time) error { return q.core.SetGroup(name, spec, now) })
}

// DeleteGroup forgets a group object (see Core.DeleteGroup).
func (q *Queue[K, T]) DeleteGroup(name string) error {
	return q.do(func(now time.Time) error { return q.core.DeleteGroup(name, now) })
}
