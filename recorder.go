package schedq

import "time"

// Recorder receives the queue's measurements. The queue calls it under its
// lock, so implementations must be fast and must not call back into the
// queue. Levels (items per place, per plugin, in-flight events) are not
// pushed: a recorder reads them with Stats when it is scraped, so they
// cannot drift from the truth.
//
// Event labels are the sent events' labels, and the queue's own: ItemAdd,
// ItemUpdate, ScheduleAttemptFailure, BackoffComplete, PopFromBackoffQ,
// ForceActivate and UnschedulableTimeout.
type Recorder interface {
	// Incoming counts an item entering sub-queue q (InActive, InBackoff,
	// InUnschedulable) because of event.
	Incoming(q Location, event string)
	// Left reports an item leaving sub-queue q (InActive, InBackoff,
	// InUnschedulable or InGated) after d in it.
	Left(q Location, d time.Duration)
	// Scheduled reports a successful attempt (Done): wait is from the item's
	// first entry into activeQ to its last pop; flushed is whether the
	// leftover flush ever brought it out of the parking area.
	Scheduled(wait time.Duration, flushed bool)
	// HintStart returns a token that HintDone gets back, so that the
	// recorder, not the queue, reads the clock that times hints.
	HintStart() int64
	// HintDone reports one queueing hint call.
	HintDone(token int64, plugin, event string, h Hint, err error)
	// Moved reports one move request: how many parked items it examined
	// (the index narrows this; with Config.HintClass, the items of the
	// cohorts it judged count, whether or not it loaded each) and how
	// many it moved out.
	Moved(event string, examined, moved int)
	// IncomingGroup counts a group entity of size members entering
	// sub-queue q because of event; a group's entity is not counted by
	// Incoming. A queue without groups never calls it.
	IncomingGroup(q Location, event string, size int)
	// JoinedGroup counts n members joining their group's entity, already
	// in sub-queue q, because of event. A queue without groups never
	// calls it.
	JoinedGroup(q Location, event string, n int)
	// Popped reports a pop under Config.Fairness, with the tenant
	// charged. A queue without fairness never calls it.
	Popped(tenant string)
}

type nopRecorder struct{}

func (nopRecorder) Incoming(Location, string)                   {}
func (nopRecorder) Left(Location, time.Duration)                {}
func (nopRecorder) Scheduled(time.Duration, bool)               {}
func (nopRecorder) HintStart() int64                            { return 0 }
func (nopRecorder) HintDone(int64, string, string, Hint, error) {}
func (nopRecorder) Moved(string, int, int)                      {}
func (nopRecorder) IncomingGroup(Location, string, int)         {}
func (nopRecorder) JoinedGroup(Location, string, int)           {}
func (nopRecorder) Popped(string)                               {}
