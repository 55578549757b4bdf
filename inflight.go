package schedq

// flightEvent is an event that happened while at least one item was in
// flight. target, if set, limits it to one key (Activate of that item);
// every other event is seen by every attempt in flight, and the hints
// decide whether it concerns their item.
type flightEvent[K comparable, T any] struct {
	seq       uint64
	event     Event
	label     string
	oldObj    any
	newObj    any
	target    K
	hasTarget bool
}

// flights tracks popped items in pop order and the log of events seen
// since the oldest of them was popped. Each flight remembers the log
// position at its pop, so a failed attempt sees exactly the events that
// happened during it.
//
// The flights are a slice of slots in pop order, each entry in flight
// holding its slot's index in entry.idx (no container indexes an entry in
// flight). An ended flight leaves a hole; holes at the front are skipped,
// and the slice is compacted when holes outnumber flights, so start and
// end are O(1) amortized and the slice holds O(flights) slots. Keeping
// the pop order here rather than in links through the entries keeps
// them small.
type flights[K comparable, T any] struct {
	n       int
	first   int // slots[first] is the oldest flight, if any
	slots   []flightSlot[K, T]
	log     []flightEvent[K, T]
	nextSeq uint64 // seq of the next event
}

// flightSlot is a flight in pop order: the log position at its pop, and
// its entry (nil once it ended).
type flightSlot[K comparable, T any] struct {
	seq uint64
	e   *entry[K, T]
}

func (f *flights[K, T]) len() int { return f.n }

// each calls fn for each entry in flight, oldest first, with the log
// position at its pop. O(n) for n slots.
func (f *flights[K, T]) each(fn func(e *entry[K, T], seq uint64, i int)) {
	for i := f.first; i < len(f.slots); i++ {
		if s := f.slots[i]; s.e != nil {
			fn(s.e, s.seq, i)
		}
	}
}

// oldestSeq returns the log position at the oldest flight's pop; ok is
// false with nothing in flight. O(1).
func (f *flights[K, T]) oldestSeq() (seq uint64, ok bool) {
	if f.n == 0 {
		return 0, false
	}
	return f.slots[f.first].seq, true
}

func (f *flights[K, T]) start(e *entry[K, T]) {
	e.loc = locFlight
	e.idx = int32(len(f.slots))
	f.slots = append(f.slots, flightSlot[K, T]{f.nextSeq, e})
	f.n++
}

// holds reports whether e, an entry in flight, is one of these flights
// (and not another Core's). O(1).
func (f *flights[K, T]) holds(e *entry[K, T]) bool {
	return int(e.idx) < len(f.slots) && f.slots[e.idx].e == e
}

// end stops tracking e and drops the events no remaining flight needs.
// O(1) amortized.
func (f *flights[K, T]) end(e *entry[K, T]) {
	f.slots[e.idx].e = nil
	e.idx = -1
	f.n--
	e.loc = locNone
	switch {
	case f.n == 0:
		// Every slot is a hole: no entry to clear.
		f.slots, f.first = f.slots[:0], 0
	case len(f.slots) > 2*f.n+32:
		f.compact()
	default:
		for f.slots[f.first].e == nil {
			f.first++
		}
	}
	f.prune()
}

// compact drops the holes, keeping the pop order, and renumbers the
// entries in flight. O(n) for n slots.
func (f *flights[K, T]) compact() {
	live := f.slots[:0]
	for _, s := range f.slots {
		if s.e != nil {
			s.e.idx = int32(len(live))
			live = append(live, s)
		}
	}
	clear(f.slots[len(live):])
	f.slots, f.first = live, 0
}

// record appends an event, if anyone is in flight to see it.
func (f *flights[K, T]) record(ev flightEvent[K, T]) {
	if f.n == 0 {
		return
	}
	ev.seq = f.nextSeq
	if ev.label == "" {
		ev.label = ev.event.label()
	}
	f.nextSeq++
	f.log = append(f.log, ev)
}

// since returns the events recorded after e was popped.
func (f *flights[K, T]) since(e *entry[K, T]) []flightEvent[K, T] {
	if len(f.log) == 0 {
		return nil
	}
	first, start := f.log[0].seq, f.slots[e.idx].seq
	if start <= first {
		return f.log
	}
	i := int(start - first)
	if i >= len(f.log) {
		return nil
	}
	return f.log[i:]
}

func (f *flights[K, T]) prune() {
	if len(f.log) == 0 {
		return
	}
	oldest, ok := f.oldestSeq()
	if !ok {
		clear(f.log)
		f.log = f.log[:0]
		return
	}
	first := f.log[0].seq
	if oldest <= first {
		return
	}
	n := int(oldest - first)
	if n > len(f.log) {
		n = len(f.log)
	}
	clear(f.log[:n])
	f.log = f.log[n:]
	if len(f.log) == 0 || cap(f.log) > 64 && len(f.log) < cap(f.log)/4 {
		f.log = append([]flightEvent[K, T](nil), f.log...)
	}
}
