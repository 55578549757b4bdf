package schedq

import (
	"slices"
	"time"
)

// Status is an item's queueing history and why it waits: what Info and
// Explanation share.
type Status struct {
	// Timestamp is when the item was added, refreshed when a failed attempt
	// requeues it. Backoff and the leftover flush count from it.
	Timestamp time.Time `json:"timestamp"`
	// InitialAttemptTimestamp is when the item first entered activeQ. It
	// never changes afterwards; the zero time means never.
	InitialAttemptTimestamp time.Time `json:"initialAttemptTimestamp,omitzero"`
	// Attempts counts pops.
	Attempts int `json:"attempts"`
	// UnschedulableCount counts failed attempts that named a check.
	UnschedulableCount int `json:"unschedulableCount"`
	// ConsecutiveErrors counts failed attempts in a row that named no check
	// (errors). An unschedulable failure resets it.
	ConsecutiveErrors int `json:"consecutiveErrors"`
	// RejectedBy names the checks that rejected the item in its last
	// failed attempt (Failure.RejectedBy).
	RejectedBy []string `json:"rejectedBy,omitempty"`
	// WaitingOn names the checks that left the item waiting for something
	// that will happen by itself; an event they accept requeues it at
	// once, not after backoff (Failure.WaitingOn).
	WaitingOn []string `json:"waitingOn,omitempty"`
	// Reasons are the last failure's Failure.Reasons: why, as data.
	Reasons []string `json:"reasons,omitempty"`
	// Message is the last failure's Failure.Message: why, for people.
	Message string `json:"message,omitempty"`
	// GatedBy names the PreEnqueue check that holds the item back, if any
	// (upstream: the gating plugin).
	GatedBy string `json:"gatedBy,omitempty"`
	// BackoffExpiry is when the current backoff ends; zero outside backoffQ.
	BackoffExpiry time.Time `json:"backoffExpiry,omitzero"`
}

// detach gives s lists of its own, copies of the queue's, so that a
// caller may change them (Pending's items). O(the lists' lengths).
func (s *Status) detach() {
	s.RejectedBy = slices.Clone(s.RejectedBy)
	s.WaitingOn = slices.Clone(s.WaitingOn)
	s.Reasons = slices.Clone(s.Reasons)
}

// Info is what the queue knows about an item. Readers get copies; the
// slices in it are never changed after they are handed out, and items
// rejected alike may share them (the plugin lists): read them, never
// write to them.
type Info[T any] struct {
	Item T
	Status
	// FlushedFromUnschedulable is true once the leftover flush, not an
	// event, brought the item out of the parking area.
	FlushedFromUnschedulable bool
	// Cycle is the scheduling cycle of the item's latest pop: the number of
	// pops the queue had made when it popped the item.
	Cycle int64
}

// Attempt is a popped item: the handle of one attempt to schedule it. Pass
// it back to Done when the attempt succeeds or is given up, or to Requeue
// when it fails. An attempt that has ended, or that a newer pop of the same
// key superseded, is refused with ErrNotInFlight. An attempt belongs to
// the queue that popped it: another queue sees only its Key (or Group) and
// Cycle, as in a handle built by hand.
type Attempt[K comparable, T any] struct {
	// Key is Config.Key(Item).
	Key K
	// Info is the item as popped; Cycle identifies the attempt. For a
	// group attempt it is the group's queueing info (Cycle, Attempts,
	// UnschedulableCount, Timestamp...) with a zero Item, and Key is zero.
	Info[T]
	// Group names the group of a group attempt; "" for a lone item.
	Group string
	// Spec is the group's spec as popped (group attempts only).
	Spec GroupSpec
	// Members are a group attempt's members, in the order to try them:
	// higher priority first, then more attempts, then earlier Timestamp,
	// then arrival order; each carries the group's Cycle.
	Members []Attempt[K, T]

	// ent is the entry Pop returned, so that Requeue finds it without a
	// map lookup while it is still this attempt's (Cycle) and nothing
	// re-added the key; an Attempt built by hand has none.
	ent *entry[K, T]
}

// Location says where an item is. The zero Location means nowhere.
type Location uint8

// The places an item can be. Gated items are parked too, but counted
// apart. The first four are the sub-queues that Recorder reports on.
const (
	InActive Location = iota + 1
	InBackoff
	InUnschedulable
	InGated
	InFlight
	// InIncomplete: a group member whose group object is unknown (no
	// SetGroup yet, or DeleteGroup since); it waits apart.
	InIncomplete
	// InPending: a group member that arrived while its group was in
	// flight; it joins the group when the attempt ends.
	InPending
)

var locationNames = [...]string{"absent", "active", "backoff", "unschedulable", "gated", "inflight", "incomplete", "pending"}

// String returns the lower-case name used in metrics and JSON: "active",
// "backoff", "unschedulable", "gated", "inflight", "incomplete", "pending",
// or "absent" for the zero Location.
func (l Location) String() string {
	if int(l) < len(locationNames) {
		return locationNames[l]
	}
	return "invalid"
}

// MarshalText implements encoding.TextMarshaler.
func (l Location) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// Counts is the number of items in each place.
type Counts struct {
	Active        int `json:"active"`
	Backoff       int `json:"backoff"`
	Unschedulable int `json:"unschedulable"`
	Gated         int `json:"gated"`
	InFlight      int `json:"inflight"`
	// Incomplete and Pending are group members waiting apart: for their
	// group object, or for their group's attempt in flight to end.
	Incomplete int `json:"incomplete,omitempty"`
	Pending    int `json:"pending,omitempty"`
}

// Stats is Counts with the levels behind the queue's gauges.
type Stats struct {
	Counts
	// Entities counts the queue's entities in each place by kind: lone
	// items, and groups (each one entity, whatever its size).
	Entities EntityCounts `json:"entities"`
	// HeldBy is, for each plugin, how many queued items it holds back:
	// items whose last attempt it rejected (until their next pop), and
	// items it gates.
	HeldBy map[string]int `json:"heldBy"`
	// InFlightEvents is how many recorded events of each label are kept
	// for attempts in flight, and, under "ItemPopped", how many attempts
	// are in flight.
	InFlightEvents map[string]int `json:"inFlightEvents"`
}

// byPriority is the default order: higher priority first, then earlier
// Timestamp.
func byPriority[T any](priority func(T) int32) func(a, b *Info[T]) bool {
	return func(a, b *Info[T]) bool {
		pa, pb := priority(a.Item), priority(b.Item)
		if pa != pb {
			return pa > pb
		}
		return a.Timestamp.Before(b.Timestamp)
	}
}
