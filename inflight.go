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

// flights tracks popped items in pop order (a doubly linked list through the
// entries) and the log of events seen since the oldest of them was popped.
// Each flight remembers the log position at its pop, so a failed attempt
// sees exactly the events that happened during it.
type flights[K comparable, T any] struct {
	n          int
	head, tail *entry[K, T]
	log        []flightEvent[K, T]
	nextSeq    uint64 // seq of the next event
}

func (f *flights[K, T]) len() int { return f.n }

func (f *flights[K, T]) start(e *entry[K, T]) {
	e.loc = locFlight
	e.startSeq = f.nextSeq
	e.prev, e.next = f.tail, nil
	if f.tail != nil {
		f.tail.next = e
	} else {
		f.head = e
	}
	f.tail = e
	f.n++
}

// end stops tracking e and drops the events no remaining flight needs.
func (f *flights[K, T]) end(e *entry[K, T]) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		f.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		f.tail = e.prev
	}
	e.prev, e.next = nil, nil
	f.n--
	e.loc = locNone
	f.prune()
}

// record appends an event, if anyone is in flight to see it.
func (f *flights[K, T]) record(ev flightEvent[K, T]) {
	if f.head == nil {
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
	first := f.log[0].seq
	if e.startSeq <= first {
		return f.log
	}
	i := int(e.startSeq - first)
	if i >= len(f.log) {
		return nil
	}
	return f.log[i:]
}

func (f *flights[K, T]) prune() {
	if len(f.log) == 0 {
		return
	}
	if f.head == nil {
		clear(f.log)
		f.log = f.log[:0]
		return
	}
	first := f.log[0].seq
	if f.head.startSeq <= first {
		return
	}
	n := int(f.head.startSeq - first)
	if n > len(f.log) {
		n = len(f.log)
	}
	clear(f.log[:n])
	f.log = f.log[n:]
	if len(f.log) == 0 || cap(f.log) > 64 && len(f.log) < cap(f.log)/4 {
		f.log = append([]flightEvent[K, T](nil), f.log...)
	}
}
