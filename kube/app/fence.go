package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/clock"

	"github.com/schedq/schedq/kube/scheduler"
)

// ErrFenced is wrapped by the error of every write the fence refuses.
// It is not a context error: a refused binding is requeued, not dropped.
var ErrFenced = errors.New("not known to hold the leader lease")

// fence says whether this replica may write to the cluster: only while it
// leads and knows it still holds the lease. It knows that until the time
// it sent its last successful renewal plus the lease duration, less a
// margin: the other replicas saw that renewal no earlier than it was sent,
// and each waits a full lease duration from the renewal it last saw
// before it takes the lease over. A failed renewal closes the fence at
// once, until a renewal succeeds again; a renewal that shows another
// holder ends the term. A nil *fence is always open (no leader election).
type fence struct {
	clock clock.PassiveClock
	valid time.Duration // lease duration less the margin

	mu      sync.Mutex
	leading bool
	open    bool // the last renewal attempt succeeded
	until   time.Time
	why     string               // why the fence is closed, for the error
	term    scheduler.LeaseStamp // the term of the last successful write of our record
	endTerm context.CancelFunc   // ends the current term
	changed chan struct{}        // closed and replaced at every change
}

func newFence(c clock.PassiveClock, leaseDuration, margin time.Duration) *fence {
	return &fence{clock: c, valid: leaseDuration - margin, why: "not leading", changed: make(chan struct{})}
}

// notify wakes the waiters; f.mu is held.
func (f *fence) notify() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// renewed records a successful acquisition or renewal sent at sentAt.
func (f *fence) renewed(sentAt time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.open, f.until = true, sentAt.Add(f.valid)
	f.notify()
}

// renewedAs is renewed, by a write of our record in term st.
func (f *fence) renewedAs(sentAt time.Time, st scheduler.LeaseStamp) {
	f.mu.Lock()
	f.term = st
	f.mu.Unlock()
	f.renewed(sentAt)
}

// stamp returns the term bindings are made under: that of the last
// successful write of our record, whether the fence is open or not. The
// fence is checked again as the request leaves (fencedTransport), and may
// have opened since: a binding built while it was closed must carry the
// stamp all the same, or the API server would not check it. False only
// before any write of our record, and for a nil *fence (no leader
// election: bindings are not stamped).
func (f *fence) stamp() (scheduler.LeaseStamp, bool) {
	if f == nil {
		return scheduler.LeaseStamp{}, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.term, f.term.Holder != ""
}

// suspect closes the fence until the next successful renewal.
func (f *fence) suspect(why string) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.open {
		f.open, f.why = false, why
		f.notify()
	}
}

// lost closes the fence and ends the term: another replica holds the lease.
func (f *fence) lost(holder string) {
	f.mu.Lock()
	end := f.endTerm
	if f.leading {
		f.open, f.why = false, fmt.Sprintf("the lease is held by %q", holder)
		f.notify()
	}
	f.mu.Unlock()
	if end != nil {
		end()
	}
}

// begin starts a term; end cancels it (on a lost lease).
func (f *fence) begin(end context.CancelFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leading, f.endTerm = true, end
	f.notify()
}

// end ends the term: nothing more is written until the next one.
func (f *fence) end() {
	if f == nil {
		return
	}
	f.mu.Lock()
	end := f.endTerm
	f.leading, f.open, f.endTerm, f.why = false, false, nil, "not leading"
	f.notify()
	f.mu.Unlock()
	if end != nil {
		end()
	}
}

// held returns nil if this replica may write now, or an error wrapping
// ErrFenced that says why not.
func (f *fence) held() error {
	if f == nil {
		return nil
	}
	now := f.clock.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.heldLocked(now)
}

func (f *fence) heldLocked(now time.Time) error {
	switch {
	case !f.leading || !f.open:
		return fmt.Errorf("%w: %s", ErrFenced, f.why)
	case !now.Before(f.until):
		return fmt.Errorf("%w: last renewal expired %v ago (lease duration less margin: %v)", ErrFenced, now.Sub(f.until), f.valid)
	}
	return nil
}

// wait returns nil once the fence is open, or ctx's error. It waits for a
// change (a renewal, a new term), never for time: time only closes it.
func (f *fence) wait(ctx context.Context) error {
	if f == nil {
		return ctx.Err()
	}
	for {
		f.mu.Lock()
		err := f.heldLocked(f.clock.Now())
		ch := f.changed
		f.mu.Unlock()
		if err == nil {
			return ctx.Err()
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// fencedLock is a Lease lock that tells the fence what each call of the
// leader elector showed: a write of our record that succeeded renews it,
// anything that failed closes it, a record held by another ends the term.
// It also refuses to release a lease its last read showed held by
// another replica (see Update).
type fencedLock struct {
	resourcelock.Interface
	fence *fence

	mu   sync.Mutex
	read string // the holder the last successful Get showed
}

// Get implements resourcelock.Interface.
func (l *fencedLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	if err == nil {
		l.mu.Lock()
		l.read = rec.HolderIdentity
		l.mu.Unlock()
	}
	switch {
	case err != nil:
		l.fence.suspect("reading the lease failed: " + err.Error())
	case rec.HolderIdentity != l.Identity():
		l.fence.lost(rec.HolderIdentity)
	}
	return rec, raw, err
}

// errNotOurs refuses the release of a lease another replica holds.
var errNotOurs = errors.New("not releasing the lease: another replica holds it")

// Create implements resourcelock.Interface.
func (l *fencedLock) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	return l.write(rec, func() error { return l.Interface.Create(ctx, rec) })
}

// Update implements resourcelock.Interface. A release (a record with no
// holder) is refused unless the read just before it showed our record:
// client-go's elector releases after it gave up renewing, reads the lease
// first, but decides by its own last observation, not by that read; a
// partition that ends as the renew deadline passes, after another replica
// took the lease over, would have it wipe that replica's record.
func (l *fencedLock) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	if rec.HolderIdentity == "" {
		l.mu.Lock()
		holder := l.read
		l.mu.Unlock()
		if holder != l.Identity() {
			l.fence.suspect("the lease is held by " + strconv.Quote(holder))
			return fmt.Errorf("%w (%q)", errNotOurs, holder)
		}
	}
	return l.write(rec, func() error { return l.Interface.Update(ctx, rec) })
}

func (l *fencedLock) write(rec resourcelock.LeaderElectionRecord, do func() error) error {
	sentAt := l.fence.clock.Now()
	err := do()
	switch {
	case err != nil:
		l.fence.suspect("renewing the lease failed: " + err.Error())
	case rec.HolderIdentity == l.Identity():
		// The write succeeded against the resourceVersion read before it:
		// the Lease now holds exactly rec, whose transitions are the term's.
		l.fence.renewedAs(sentAt, scheduler.LeaseStamp{Lease: l.Describe(), Holder: rec.HolderIdentity, Transitions: int32(rec.LeaderTransitions)})
	default: // released
		l.fence.suspect("the lease was released")
	}
	return err
}

// fencedTransport refuses every request that writes, unless the fence is
// open at the moment the request leaves: after client-go's rate limiter,
// so a binding that waited for its turn is checked when it is sent.
type fencedTransport struct {
	next  http.RoundTripper
	fence *fence
}

// RoundTrip implements http.RoundTripper.
func (t fencedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		if err := t.fence.held(); err != nil {
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, fmt.Errorf("%s %s refused: %w", req.Method, req.URL.Path, err)
		}
	}
	return t.next.RoundTrip(req)
}
