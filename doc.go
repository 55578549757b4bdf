// Package schedq is a scheduling queue: it decides which waiting item a
// scheduler tries next, parks the items that cannot be placed until
// something changes, and backs off the items that keep failing. It is the
// queue of Kubernetes' kube-scheduler made generic: the items can be pods,
// jobs, or any work that waits for room.
//
// # The places an item can be
//
//   - activeQ: ready to be tried, in priority order (Config.Priority or
//     Config.Less); equals pop in the order they entered activeQ.
//   - backoffQ: failed recently; waits out an exponential backoff
//     (Config.InitialBackoff doubling up to Config.MaxBackoff).
//   - unschedulable: parked after a check rejected it, until an event that
//     check registered for (Config.Hints) and whose hint accepts the item,
//     or until the leftover flush after Config.MaxInUnschedulable.
//   - gated: held by a PreEnqueue check (Config.PreEnqueue) until it admits
//     the item.
//   - in flight: popped, and being tried.
//
// # Groups
//
// With Config.Group set, items may belong to groups that are tried all at
// once (gang scheduling; see docs/groups.md). A group whose object the
// caller gave (SetGroup) is one entity in the places above, ordered by its
// GroupSpec.Priority; Pop returns it with its members, and one Done or
// Requeue reports the whole attempt's outcome. Members wait apart while
// their group object is unknown (InIncomplete) or while their group is in
// flight (InPending). Every member is in exactly one place: incomplete,
// its group's entity, pending, or in flight. Several groups may be in
// flight at once, and a rejected group is parked and woken by hints judged
// for each member, like a lone item.
//
// # Using it
//
// Pop returns an Attempt. When the attempt succeeds, pass it to Done (a
// group attempt that placed some of its members only: DoneMembers); when
// it fails, pass it to Requeue with the names of the checks that rejected
// the item (Failure.RejectedBy), or that make it wait for something that
// happens by itself (Failure.WaitingOn). A check is one test of the
// scheduler's that an item must pass, known to the queue by its name
// alone: kube-scheduler calls them plugins.
// Park queues an item that no Pop returned as if an attempt had failed;
// Restore queues one where another queue, which it copies, holds it, with
// its history there (attempts, failures, timestamps, backoff expiry), so
// that the copy goes on as the original would.
// Report what happens in the world with Move (an Event, with its objects
// for the hints), and changes to queued items with Add, Update and Delete.
// Activate sends items straight to activeQ. Get, Explain, Dump, Pending,
// Counts and Stats read the queue.
//
// # Fairness
//
// Config.Fairness orders activeQ fairly between tenants: within a
// priority level, the next item comes from the tenant with the lowest
// weighted usage, decayed over a half-life (see Fairness). Off by
// default. With it, Pop is O(log t + log m) for t tenants with m items
// in activeQ, and Add, Pop and Done still allocate nothing.
//
// Explain also gives the item's position in line, which costs O(n) more;
// Pending lists the queued items in the order they wait, in O(n log n), of
// which the concurrent Queue holds its lock for O(n) and O(page);
// unexplained (PendingOptions.Unexplained), a listing's items are
// explained later, those shown, with ExplainListed, which keeps an item's
// listed place in activeQ only while the item has not left activeQ since.
//
// # Nominations
//
// Nominate records that an item is to go to a target its caller made
// ready for it (room freed by preemption); Nominated(target) lists the
// items nominated there, in O(items there), so that a scheduler counts
// that room as taken. Delete and Done drop an item's nomination in the
// same operation, so nominations never outlive their items.
//
// An event that happens while an item is in flight is remembered: if the
// attempt then fails, the event can still send the item to be retried
// rather than parked, so an attempt racing an event never strands its item.
//
// # Core and Queue
//
// Core is the deterministic state machine: it takes the current time as
// an argument, starts no goroutines, takes no locks and reads no clock.
// Tick(now) runs its periodic work (the backoff and leftover flushes) and
// NextDeadline says when Tick next has work, so a simulation drives Core in
// virtual time and idle time costs nothing. The same operations on the same
// Core, at the same times, give the same results: ties are broken by entry
// order, never by map order.
//
// Queue is Core behind one mutex, for concurrent use: Pop blocks until an
// item is poppable (it is woken whenever an operation leaves one), and Run
// drives Tick on Config.Clock. Every callback of the caller's runs under
// that lock, inside the operation that calls it (one exception: Config.Less,
// which Queue.Pending's sort also calls after releasing the lock, on copies
// of the items' Info, maybe while other operations run; Less being pure,
// that is safe):
//
//   - from Config: Key, Priority or Less, Group, HintClass, Match,
//     UpdateEvents, the hint functions (EventHint.Fn), the PreEnqueue checks (Admit), Budget
//     and the Take, Return and Key of the budgets it returns, Fairness's
//     Tenant, Weight and Cost, CheckInvariants, the Recorder's methods,
//     and Clock.Now;
//   - passed to a call: Move's match, and PendingOptions.Match (Queue.Pending
//     calls it while it holds the lock to copy the queue; it sorts after
//     releasing it).
//
// The pure ones (Key, Priority, Less, Group, HintClass, Match, UpdateEvents, the
// hints, Admit, Tenant, Weight, Cost and the two match functions) must
// depend only on their arguments. Budgets and the Recorder keep state of
// their own, and they too run under the lock, for a reason: a budget's
// answer decides, within the operation, whether an item wakes, and the
// Recorder hears of each change in the order the changes happen, which a
// Recorder called after the lock is released could not. Every callback
// must be fast, must not block, and must not call back into the queue
// (that deadlocks Queue).
//
// # Cost
//
// With n queued items: Add, Update, Delete, Pop, Requeue and Activate of
// one item are O(log n); Done, Get and Counts are O(1). A move request is
// O(k log n) for the k items held back by the checks the event concerns
// (found through an index by check, not by a scan), plus one hint call per
// such item and check; with Config.HintClass and no match, O(c) for the c
// cohorts of alike items among them (one hint call per cohort and check)
// when none moves, else also O(k) reads of a dense index and O(m log n)
// for the m items moved; a wake budget adds O(k) for the items it
// defers (a heap of their sort keys; those deferred with their cohorts
// are not written to, and an event that ends lets them go in O(c·e)
// for c cohorts and e live events deferring each); under Config.Fairness
// it sorts them into fair pop order, O(k log k).
// Tick is O(m log n) for m items moved, plus O(p) for
// p parked items when the leftover flush runs. Explain is O(r + n) for r
// hint registrations and n queued items (its position in line), plus O(m)
// for a member of a group of m members, plus O(e·d) for the e live
// events that defer a parked item's cohort, d items each holds alone;
// Dump is O(n log n), of which the concurrent Queue holds its lock for
// O(n). In steady state Add, Pop and Done allocate nothing.
// A group of m members costs O(m log m) to pop, with one allocation (its
// Members), and O(m) to requeue; Counts and Stats are O(g) for g groups.
//
// # Errors
//
// Errors wrap the sentinel errors (ErrClosed, ErrNotFound, ErrNotInFlight,
// ErrAlreadyQueued, ErrInvalidConfig, ErrInvalidGroup): test them with
// errors.Is. A late or repeated Done is refused with ErrNotInFlight and
// changes nothing. A late or repeated Requeue changes no queued item: it
// gets ErrAlreadyQueued if the key is queued (after the first Requeue, or
// added again during the attempt, whose Requeue then ends the attempt and
// leaves the new copy queued), else ErrNotInFlight. Delete removes both a
// queued copy and the attempt in flight of its key.
package schedq
