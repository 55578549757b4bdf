package schedq

import "fmt"

// Action is a set of things that can happen to an object, as bits the
// caller defines: a job queue might use 1<<0 for "started" and 1<<1 for
// "quota changed". The queue only tests whether two sets overlap (unless
// Config.Match says otherwise).
type Action uint64

// AnyAction is every action. An Event with AnyKind and AnyAction is a
// wildcard: registered, it hears every event; sent, it reaches every parked
// item without asking the hints.
const AnyAction Action = ^Action(0)

// AnyKind, as an Event's Kind, stands for every kind of object.
const AnyKind = "*"

// Event is something that happened outside the queue and may make parked
// items worth trying again: a machine joined, a job finished, a quota grew.
// The queue treats events as opaque values: it compares a sent event with
// the registered ones through Config.Match and passes the event's objects
// to the hints, nothing more.
type Event struct {
	// Kind names the kind of object that changed, as the caller likes
	// ("Machine", "Job"). AnyKind matches every kind.
	Kind string
	// Action is what happened to it.
	Action Action
	// Label names the event in metrics and explanations. Empty: Kind and
	// the action bits in hexadecimal, as in "Machine/0x1".
	Label string
}

// The labels of the queue's own events, as Recorder.Incoming and the
// in-flight event counts report them.
const (
	labelAdd             = "ItemAdd"
	labelUpdate          = "ItemUpdate"
	labelAttemptFailure  = "ScheduleAttemptFailure"
	labelBackoffComplete = "BackoffComplete"
	labelPopFromBackoff  = "PopFromBackoffQ"
	labelForceActivate   = "ForceActivate"
	labelTimeout         = "UnschedulableTimeout"
	labelInFlight        = "ItemPopped"
)

// The queue's wildcard events: the leftover flush and Activate.
var (
	eventTimeout       = Event{Kind: AnyKind, Action: AnyAction, Label: labelTimeout}
	eventForceActivate = Event{Kind: AnyKind, Action: AnyAction, Label: labelForceActivate}
	// eventUpdate is what an update amounts to when Config.UpdateEvents
	// is nil: anything may have changed.
	eventUpdate = Event{Kind: AnyKind, Action: AnyAction, Label: labelUpdate}
)

// label returns the event's label: Label, or one built from Kind and Action.
func (e Event) label() string {
	if e.Label != "" {
		return e.Label
	}
	return fmt.Sprintf("%s/%#x", e.Kind, uint64(e.Action))
}

// wildcard reports whether e is a wildcard: any kind, every action.
func (e Event) wildcard() bool { return e.Kind == AnyKind && e.Action == AnyAction }

// defaultMatch is the match rule when Config.Match is nil: a wildcard
// registration hears everything; otherwise the kinds agree (or the
// registration's is AnyKind) and the action sets overlap.
func defaultMatch(registered, sent Event) bool {
	if registered.Kind != AnyKind && registered.Kind != sent.Kind {
		return false
	}
	return registered.Action&sent.Action != 0
}
