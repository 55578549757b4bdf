package sim

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/scheduler"
)

// place is where a pod is in the queue and how long it has spent in each
// place so far.
type place struct {
	loc     schedq.Location // 0: not in the queue
	since   time.Time       // when it came to loc
	entered time.Time       // the queue's own entry instant (see places)
	spent   [placeCount]time.Duration
	member  bool // of a gang
}

// placeCount sizes the per-place totals: every Location is an index.
const placeCount = schedq.InPending + 1

// places follows every pod through the queue's places, to total the time
// each pod spends in each. The queue's Recorder reports the end of every
// stay in a sub-queue (Left(q, d)) but not whose. The simulator knows the
// pod of each operation it makes (Add, Update, Delete, Pop, Done,
// Requeue) and reads its place after the operation. The other pods an
// operation moves (a move request, a flush, a wake when room frees) are
// found from the stays that ended: a stay of d ended now began at now−d,
// so the mover is among the pods that entered a place at that instant,
// which byEntry indexes.
//
// A pod re-filed between the parked places (unschedulable and gated) by a
// move request is not reported by the queue; its time counts in the place
// the simulator last saw, until an operation on the pod shows the change.
//
// Members of a gang move with their group (a group attempt, SetGroup,
// DeleteGroup, a group leaving a sub-queue), and the queue reports a
// group's stay, not its members'. So after each such operation, and after
// any operation that ended a stay, the simulator reads the place of every
// gang member still queued.
//
// Cost: O(1) per operation on a pod, plus, per stay ended by a move,
// the pods that entered their place at the same instant, plus the queued
// gang members when there are any.
type places struct {
	byKey   map[types.NamespacedName]*podStat
	byEntry map[int64]map[types.NamespacedName]struct{}
	left    []int64                           // entry instants of stays ended by the current operation
	members map[types.NamespacedName]struct{} // queued gang members
}

func newPlaces() places {
	return places{byKey: map[types.NamespacedName]*podStat{}, byEntry: map[int64]map[types.NamespacedName]struct{}{},
		members: map[types.NamespacedName]struct{}{}}
}

// add follows a new pod; member says it belongs to a gang.
func (pl *places) add(key types.NamespacedName, st *podStat, member bool) {
	pl.byKey[key] = st
	st.place.member = member
	if member {
		pl.members[key] = struct{}{}
	}
}

// settleAttempt settles after an operation on an attempt: a lone pod's,
// or a group's, whose members are its pods.
func (s *sim) settleAttempt(a scheduler.Attempt) {
	if a.Group == "" {
		s.settle(a.Key, true)
		return
	}
	for _, m := range a.Members {
		s.observe(m.Key, true)
	}
	s.settleGroups()
}

// settleGroups settles after an operation on a group.
func (s *sim) settleGroups() {
	for k := range s.pl.members {
		s.observe(k, true)
	}
	s.settle(types.NamespacedName{}, false)
}

// queued reports whether l is a sub-queue the Recorder reports on.
func queued(l schedq.Location) bool { return l >= schedq.InActive && l <= schedq.InGated }

// parkedLoc reports whether l is in the parking area, where the queue
// re-files a pod between unschedulable and gated without a new entry.
func parkedLoc(l schedq.Location) bool { return l == schedq.InUnschedulable || l == schedq.InGated }

// stayEnded is the Recorder's Left: a stay of d ended at now.
func (s *sim) stayEnded(d time.Duration) { s.pl.left = append(s.pl.left, s.now.Add(-d).UnixNano()) }

// settle brings every pod's place up to date after a queue operation on
// key (keyed false: an operation on no pod in particular), then updates
// the exact peaks. O(1) when the operation moved no other pod.
func (s *sim) settle(key types.NamespacedName, keyed bool) {
	if keyed {
		s.observe(key, true)
	}
	if len(s.pl.left) > 0 {
		for k := range s.pl.members {
			s.observe(k, true)
		}
	}
	for len(s.pl.left) > 0 {
		at := s.pl.left[len(s.pl.left)-1]
		s.pl.left = s.pl.left[:len(s.pl.left)-1]
		for k := range s.pl.byEntry[at] {
			s.observe(k, false)
		}
	}
	s.peaks()
}

// observe reads key's place from the queue and, if it changed, closes its
// stay in the old place. With consume, the ended stay is taken off the
// list of stays to look for.
func (s *sim) observe(key types.NamespacedName, consume bool) {
	st := s.pl.byKey[key]
	if st == nil {
		return
	}
	_, loc, ok := s.core.Get(key)
	if !ok {
		loc = 0
	}
	p := &st.place
	if loc == p.loc {
		return
	}
	refiled := parkedLoc(p.loc) && parkedLoc(loc)
	if p.loc != 0 {
		p.spent[p.loc] += s.now.Sub(p.since)
	}
	if queued(p.loc) && !refiled {
		at := p.entered.UnixNano()
		s.unindex(key, at)
		if consume {
			if i := lastIndex(s.pl.left, at); i >= 0 {
				s.pl.left = append(s.pl.left[:i], s.pl.left[i+1:]...)
			}
		}
	}
	p.loc, p.since = loc, s.now
	if loc == 0 {
		delete(s.pl.members, key)
	}
	if queued(loc) && !refiled {
		p.entered = s.now
		at := s.now.UnixNano()
		m := s.pl.byEntry[at]
		if m == nil {
			m = map[types.NamespacedName]struct{}{}
			s.pl.byEntry[at] = m
		}
		m[key] = struct{}{}
	}
}

func (s *sim) unindex(key types.NamespacedName, at int64) {
	if m := s.pl.byEntry[at]; m != nil {
		delete(m, key)
		if len(m) == 0 {
			delete(s.pl.byEntry, at)
		}
	}
}

func lastIndex(xs []int64, x int64) int {
	for i := len(xs) - 1; i >= 0; i-- {
		if xs[i] == x {
			return i
		}
	}
	return -1
}

// spentUntil returns the time a pod spent in each place, its current stay
// counted up to now.
func (p *place) spentUntil(now time.Time) [placeCount]time.Duration {
	out := p.spent
	if p.loc != 0 {
		out[p.loc] += now.Sub(p.since)
	}
	return out
}

// peaks updates the exact peak of each place, and the largest sizes of
// the current instant, which the series keeps beside the instant's last
// sizes so that the chart shows the peaks the report states.
func (s *sim) peaks() {
	c := s.core.Counts()
	s.peak = maxCounts(s.peak, c)
	s.instant = maxCounts(s.instant, c)
}

func maxCounts(a, b schedq.Counts) schedq.Counts {
	return schedq.Counts{
		Active: max(a.Active, b.Active), Backoff: max(a.Backoff, b.Backoff),
		Unschedulable: max(a.Unschedulable, b.Unschedulable), Gated: max(a.Gated, b.Gated),
		InFlight: max(a.InFlight, b.InFlight),
	}
}
