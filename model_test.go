package schedq

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/schedq/schedq/internal/backoff"
)

// model is the queue's specification written the plain way: a map of
// items with a place each, linear scans instead of heaps and indexes, and
// the whole event history instead of a pruned log. The fuzz test runs the
// same operations on it and on Core and compares them after every step.
// Priorities are distinct per name, so that pop order is fully defined.
type model struct {
	cfg      Config[string, job]
	regs     []registration[job]
	items    map[string]*mItem
	flights  map[string]*mItem
	events   []mEvent
	cycle    int64
	moveReq  int64
	now      time.Time // of the operation under way, for the budgets
	rechecks []*mGroup
	rooms    map[string]*mRoom
	fair     *mFair // Config.Fairness, or nil
}

type mItem struct {
	Info[job]
	tookFrom   *mGroup
	deferredBy []*mGroup
	strategy   strategy
	loc        Location
	errHeap    bool
	lastFlush  time.Time
	start      int // index into model.events at pop
	updated    bool
	deleted    bool
}

type mEvent struct {
	ev       Event
	old, new any
	target   string
}

func newModel(cfg Config[string, job]) *model {
	cfg, _ = cfg.validate()
	return &model{cfg: cfg, regs: flatten(cfg.Hints), items: map[string]*mItem{}, flights: map[string]*mItem{}, moveReq: -1,
		fair: newMFair(cfg.Fairness)}
}

func (m *model) rejected(it *mItem) bool {
	return len(it.RejectedBy)+len(it.WaitingOn) > 0
}

func (m *model) admit(it *mItem) bool {
	if it.Item.gated {
		it.GatedBy = "Gate"
		return false
	}
	it.GatedBy = ""
	return true
}

func (m *model) popFromBackoff() bool { return !m.cfg.DisablePopFromBackoff }

func (m *model) backoffFor(it *mItem) time.Duration {
	if m.cfg.DisableBackoff {
		return 0
	}
	n := it.UnschedulableCount
	if it.ConsecutiveErrors > 0 {
		n = it.ConsecutiveErrors
	}
	return backoff.Duration(n, m.cfg.InitialBackoff, m.cfg.MaxBackoff)
}

func (m *model) release(expiry time.Time) time.Time {
	if !m.popFromBackoff() {
		return expiry.Add(time.Nanosecond) // strictly after the expiry
	}
	return time.Unix(0, (backoff.WindowOf(expiry)+1)*int64(time.Second))
}

func (m *model) backingOff(it *mItem, now time.Time) bool {
	d := m.backoffFor(it)
	return d > 0 && m.release(it.Timestamp.Add(d)).After(now)
}

func (m *model) park(it *mItem) {
	m.giveBack(it)
	if it.loc != InUnschedulable && it.loc != InGated {
		it.BackoffExpiry = time.Time{}
	}
	if it.GatedBy != "" {
		it.loc = InGated
		it.deferredBy = nil // a gated item waits for its gate, not for room
	} else {
		it.loc = InUnschedulable
	}
}

func (m *model) toActive(it *mItem, fromBackoff bool, now time.Time) bool {
	if !(fromBackoff && m.popFromBackoff()) && !m.admit(it) {
		it.FlushedFromUnschedulable = false // still gated: not flushed out
		m.park(it)
		return false
	}
	if it.InitialAttemptTimestamp.IsZero() {
		it.InitialAttemptTimestamp = now
	}
	it.loc = InActive
	it.deferredBy = nil
	it.BackoffExpiry = time.Time{}
	return true
}

func (m *model) toBackoff(it *mItem, now time.Time) {
	if m.popFromBackoff() && !m.admit(it) {
		it.FlushedFromUnschedulable = false // still gated: not flushed out
		m.park(it)
		return
	}
	it.loc = InBackoff
	it.deferredBy = nil
	it.errHeap = !m.rejected(it)
	it.BackoffExpiry = it.Timestamp.Add(m.backoffFor(it))
}

func (m *model) requeue(it *mItem, s strategy, now time.Time) {
	switch {
	case s == stayParked:
		m.park(it)
	case s == afterBackoff && m.backingOff(it, now):
		m.toBackoff(it, now)
	default:
		m.toActive(it, false, now)
	}
}

func (m *model) holds(it *mItem, plugin string) bool {
	return plugin == it.GatedBy || slices.Contains(it.RejectedBy, plugin) || slices.Contains(it.WaitingOn, plugin)
}

func (m *model) worth(it *mItem, e mEvent) strategy {
	if ev := e.ev; ev.wildcard() || !m.rejected(it) && it.GatedBy == "" {
		return afterBackoff
	}
	s := stayParked
	for _, r := range m.regs {
		if !modelMatch(r.event, e.ev) || !m.holds(it, r.plugin) {
			continue
		}
		if r.fn != nil && !m.cfg.DisableQueueingHints {
			if h, err := r.fn(it.Item, e.old, e.new); err == nil && h == HintSkip {
				continue
			}
		}
		if slices.Contains(it.WaitingOn, r.plugin) {
			return immediately
		}
		s = afterBackoff
	}
	return s
}

func (m *model) gatingMatches(it *mItem, ev Event) bool {
	if ev.wildcard() {
		return true
	}
	for _, r := range m.regs {
		if r.plugin == it.GatedBy && modelMatch(r.event, ev) {
			return true
		}
	}
	return false
}

func (m *model) add(p job, now time.Time) {
	old := m.items[p.name]
	it := &mItem{Info: Info[job]{Item: p, Status: Status{Timestamp: now}}}
	m.items[p.name] = it
	if old != nil {
		m.giveBack(old)
	}
	m.toActive(it, false, now)
}

func (m *model) update(old, p job, now time.Time) {
	it := m.items[p.name]
	if it == nil {
		if f := m.flights[p.name]; f != nil {
			f.Item, f.updated = p, true
			for _, ev := range m.cfg.UpdateEvents(old, p) {
				m.record(mEvent{ev: ev, old: old, new: p})
			}
			return
		}
		it = &mItem{Info: Info[job]{Item: p, Status: Status{Timestamp: now}}}
		m.items[p.name] = it
		m.toActive(it, false, now)
		return
	}
	it.Item = p
	if it.loc == InActive || it.loc == InBackoff {
		return
	}
	evs := m.cfg.UpdateEvents(old, p)
	if m.cfg.DisableQueueingHints {
		if len(evs) > 0 {
			m.requeue(it, afterBackoff, now)
		}
		return
	}
	for _, ev := range evs {
		if it.loc == InGated && !m.gatingMatches(it, ev) {
			continue
		}
		if s := m.worth(it, mEvent{ev: ev, old: old, new: p}); s != stayParked {
			m.requeue(it, s, now)
			if it.loc != InUnschedulable && it.loc != InGated {
				return
			}
		}
	}
}

func (m *model) record(e mEvent) {
	if len(m.flights) > 0 {
		m.events = append(m.events, e)
	}
}

func (m *model) pop(now time.Time) (Info[job], bool) {
	var best *mItem
	for _, it := range m.items {
		if it.loc == InActive && (best == nil || m.before(it, best)) {
			best = it
		}
	}
	if best == nil && m.popFromBackoff() {
		for _, it := range m.items {
			if it.loc != InBackoff || it.errHeap {
				continue
			}
			if best == nil {
				best = it
				continue
			}
			wi, wb := backoff.WindowOf(it.BackoffExpiry), backoff.WindowOf(best.BackoffExpiry)
			if wi < wb || wi == wb && m.cfg.Less(&it.Info, &best.Info) {
				best = it
			}
		}
		if best != nil && best.InitialAttemptTimestamp.IsZero() {
			best.InitialAttemptTimestamp = now
		}
	}
	if best == nil {
		return Info[job]{}, false
	}
	delete(m.items, best.Item.name)
	m.charge(best, now)
	m.cycle++
	best.Attempts++
	best.Cycle = m.cycle
	best.BackoffExpiry = time.Time{}
	best.loc = InFlight
	best.start = len(m.events)
	best.updated, best.deleted = false, false
	old := m.flights[best.Item.name]
	m.flights[best.Item.name] = best
	if old != nil {
		m.giveBack(old) // superseded
	}
	return best.Info, true
}

func (m *model) endFlight(name string) {
	delete(m.flights, name)
	if len(m.flights) == 0 {
		m.events = m.events[:0]
		for _, f := range m.flights {
			f.start = 0
		}
	}
}

func (m *model) done(name string, cycle int64) error {
	f := m.flights[name]
	if f == nil || f.Cycle != cycle {
		return ErrNotInFlight
	}
	m.endFlight(name)
	m.giveBack(f)
	return nil
}

func (m *model) fail(p job, cycle int64, f Failure, now time.Time) error {
	it := m.flights[p.name]
	if it != nil && it.Cycle != cycle {
		it = nil
	}
	if m.items[p.name] != nil {
		if it != nil {
			m.endFlight(p.name)
			m.giveBack(it)
		}
		return ErrAlreadyQueued
	}
	if it == nil {
		return ErrNotInFlight
	}
	if it.deleted {
		m.endFlight(p.name)
		m.giveBack(it)
		return nil
	}
	m.giveBack(it)
	if !it.updated {
		it.Item = p
	}
	since := slices.Clone(m.events[it.start:])
	m.endFlight(p.name)
	m.failed(it, p, cycle, f, since, now)
	return nil
}

// parkNew is Core.Park: p, unknown, comes in as failed with f.
func (m *model) parkNew(p job, f Failure, now time.Time) error {
	if m.items[p.name] != nil || m.flights[p.name] != nil {
		return ErrAlreadyQueued
	}
	m.failed(&mItem{Info: Info[job]{Item: p, Status: Status{Timestamp: now}}}, p, 0, f, nil, now)
	return nil
}

// errModelRestoreLoc is the model's refusal of a place Restore does not
// queue to; the queue's error need only be an error.
var errModelRestoreLoc = errors.New("model: restore to another place")

// restore is Core.Restore as its doc comment says: refused if the key is
// queued or in flight, or for a place other than activeQ, backoffQ and
// unschedulable; otherwise queued there with st's history: parked behind
// st's plugins (no check asked), in backoffQ until st.BackoffExpiry while
// backoff is on and the backoff flush would not yet release an item of
// that expiry (release), else in activeQ, where a
// PreEnqueue check gates it as it would any item entering.
func (m *model) restore(p job, loc Location, st Status, now time.Time) error {
	if m.items[p.name] != nil || m.flights[p.name] != nil {
		return ErrAlreadyQueued
	}
	if loc != InActive && loc != InBackoff && loc != InUnschedulable {
		return errModelRestoreLoc
	}
	it := &mItem{Info: Info[job]{Item: p, Status: Status{
		Timestamp: st.Timestamp, InitialAttemptTimestamp: st.InitialAttemptTimestamp,
		Attempts: st.Attempts, UnschedulableCount: st.UnschedulableCount, ConsecutiveErrors: st.ConsecutiveErrors,
		RejectedBy: slices.Clone(st.RejectedBy), WaitingOn: slices.Clone(st.WaitingOn),
		Reasons: slices.Clone(st.Reasons), Message: st.Message,
	}}}
	m.items[p.name] = it
	switch {
	case loc == InUnschedulable:
		m.park(it)
	case loc == InBackoff && !m.cfg.DisableBackoff && m.release(st.BackoffExpiry).After(now):
		m.toBackoff(it, now)
		if it.loc == InBackoff {
			it.BackoffExpiry = st.BackoffExpiry
		}
	default:
		m.toActive(it, false, now)
	}
	return nil
}

// failed records f on it, released from its attempt of cycle during which
// the events since happened, and queues it where they say.
func (m *model) failed(it *mItem, p job, cycle int64, f Failure, since []mEvent, now time.Time) {
	it.Timestamp = now
	it.BackoffExpiry = time.Time{}
	it.FlushedFromUnschedulable = false
	it.RejectedBy = slices.Clone(f.RejectedBy)
	it.WaitingOn = slices.Clone(f.WaitingOn)
	it.Reasons, it.Message = slices.Clone(f.Reasons), f.Message
	if m.rejected(it) {
		it.UnschedulableCount++
		it.ConsecutiveErrors = 0
	} else {
		it.ConsecutiveErrors++
	}
	s := stayParked
	switch {
	case !m.rejected(it):
		s = afterBackoff
	case m.cfg.DisableQueueingHints:
		if cycle == 0 || m.moveReq >= cycle {
			s = afterBackoff
		}
	default:
		for _, e := range since {
			if e.target != "" && e.target != p.name {
				continue
			}
			s = max(s, m.worth(it, e))
		}
	}
	m.items[p.name] = it
	m.requeue(it, s, now)
}

func (m *model) deleteKey(name string) error {
	it, f := m.items[name], m.flights[name]
	if it == nil && f == nil {
		return ErrNotFound
	}
	if f != nil {
		f.deleted = true // also when re-added during the attempt
	}
	if it != nil {
		delete(m.items, name)
		it.deferredBy = nil
		m.giveBack(it)
	}
	return nil
}

func (m *model) interested(ev Event) bool {
	for _, r := range m.regs {
		if modelMatch(r.event, ev) {
			return true
		}
	}
	return ev.wildcard()
}

func (m *model) moveItems(names []string, e mEvent, keep func(*mItem) bool, now time.Time) {
	var b Budget[job]
	if m.cfg.Budget != nil && !e.ev.wildcard() {
		b, _ = m.cfg.Budget(e.ev, e.old, e.new)
	}
	var ready []*mItem
	for _, name := range names {
		it := m.items[name]
		if it.loc != InUnschedulable && it.loc != InGated || !keep(it) {
			continue
		}
		if it.loc == InGated && !m.gatingMatches(it, e.ev) {
			continue
		}
		if s := m.worth(it, e); s != stayParked {
			if b != nil && it.loc == InUnschedulable {
				it.strategy = s
				ready = append(ready, it)
				continue
			}
			m.requeue(it, s, now)
		}
	}
	if len(ready) > 0 {
		m.wakeWithin(b, ready)
	}
	m.moveReq = m.cycle
	m.record(e)
}

func (m *model) sortedNames() []string {
	var names []string
	for name := range m.items {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func (m *model) moveAll(ev Event, obj any, now time.Time) {
	if !m.interested(ev) {
		return
	}
	m.moveItems(m.sortedNames(), mEvent{ev: ev, new: obj}, func(*mItem) bool { return true }, now)
}

func (m *model) moveMatching(ev Event, obj any, label string, now time.Time) {
	if !m.interested(ev) {
		return
	}
	m.moveItems(m.sortedNames(), mEvent{ev: ev, new: obj}, func(it *mItem) bool { return it.Item.label == label }, now)
}

func (m *model) activate(name string, now time.Time) {
	if it := m.items[name]; it != nil && it.loc != InActive {
		if m.toActive(it, it.loc == InBackoff, now) {
			return
		}
	}
	if m.flights[name] != nil {
		m.record(mEvent{ev: eventForceActivate, target: name})
	}
	m.moveReq = m.cycle
}

func (m *model) flushBackoff(now time.Time) {
	m.recheck()
	for _, name := range m.sortedNames() {
		if it := m.items[name]; it.loc == InBackoff && !m.release(it.BackoffExpiry).After(now) {
			m.toActive(it, true, now)
		}
	}
}

func (m *model) flushLeftover(now time.Time) {
	var names []string
	for _, name := range m.sortedNames() {
		it := m.items[name]
		if it.loc != InUnschedulable && it.loc != InGated {
			continue
		}
		since := it.Timestamp
		if it.lastFlush.After(since) {
			since = it.lastFlush
		}
		if now.Sub(since) > m.cfg.MaxInUnschedulable {
			it.FlushedFromUnschedulable = true
			it.lastFlush = now
			names = append(names, name)
		}
	}
	if len(names) > 0 {
		m.moveItems(names, mEvent{ev: eventTimeout}, func(*mItem) bool { return true }, now)
	}
}

func (m *model) counts() Counts {
	var c Counts
	for _, it := range m.items {
		switch it.loc {
		case InActive:
			c.Active++
		case InBackoff:
			c.Backoff++
		case InUnschedulable:
			c.Unschedulable++
		case InGated:
			c.Gated++
		}
	}
	c.InFlight = len(m.flights)
	return c
}

// compare reports the first difference between the model and the core.
func (m *model) compare(c *Core[string, job], names []string) error {
	if got, want := c.Counts(), m.counts(); got != want {
		return fmt.Errorf("counts %+v, model %+v", got, want)
	}
	for _, name := range names {
		info, loc, ok := c.Get(name)
		var want *mItem
		if it := m.items[name]; it != nil {
			want = it
		} else if f := m.flights[name]; f != nil {
			want = f
		}
		if !ok || want == nil {
			if ok != (want != nil) {
				return fmt.Errorf("%s: present %v, model %v", name, ok, want != nil)
			}
			continue
		}
		if loc != want.loc {
			return fmt.Errorf("%s: at %v, model %v", name, loc, want.loc)
		}
		if x, _ := c.Explain(name, m.now); (x.DeferredBy != "") != (len(want.deferredBy) > 0) {
			return fmt.Errorf("%s: deferred by %q, model deferred %v", name, x.DeferredBy, len(want.deferredBy) > 0)
		}
		g, w := info, want.Info
		if g.Item != w.Item || !g.Timestamp.Equal(w.Timestamp) || !g.InitialAttemptTimestamp.Equal(w.InitialAttemptTimestamp) ||
			g.Attempts != w.Attempts || g.UnschedulableCount != w.UnschedulableCount || g.ConsecutiveErrors != w.ConsecutiveErrors ||
			g.GatedBy != w.GatedBy || !g.BackoffExpiry.Equal(w.BackoffExpiry) ||
			g.FlushedFromUnschedulable != w.FlushedFromUnschedulable || g.Cycle != w.Cycle ||
			!slices.Equal(g.RejectedBy, w.RejectedBy) || !slices.Equal(g.WaitingOn, w.WaitingOn) ||
			!slices.Equal(g.Reasons, w.Reasons) || g.Message != w.Message {
			return fmt.Errorf("%s: info\n  core  %+v\n  model %+v", name, g, w)
		}
	}
	return nil
}

// modelMatch is the default match rule, as the model states it.
func modelMatch(reg, ev Event) bool {
	if reg.Kind == AnyKind && reg.Action == AnyAction {
		return true
	}
	return (reg.Kind == AnyKind || reg.Kind == ev.Kind) && reg.Action&ev.Action != 0
}
