package schedq

import "time"

// Info is what the queue knows about an item. Readers get copies; the
// slices in it are never changed after they are handed out.
type Info[T any] struct {
	Item T
	// Timestamp is when the item was added, refreshed when a failed attempt
	// requeues it. Backoff and the leftover flush count from it.
	Timestamp time.Time
	// InitialAttemptTimestamp is when the item first entered activeQ. It
	// never changes afterwards; the zero time means never.
	InitialAttemptTimestamp time.Time
	// Attempts counts pops.
	Attempts int
	// UnschedulableCount counts failed attempts that named a plugin.
	UnschedulableCount int
	// ConsecutiveErrors counts failed attempts in a row that named no plugin
	// (errors). An unschedulable failure resets it.
	ConsecutiveErrors int
	// UnschedulablePlugins rejected the item in its last failed attempt.
	UnschedulablePlugins []string
	// PendingPlugins left the item waiting for something that will happen
	// by itself; an event they accept requeues it at once, not after backoff.
	PendingPlugins []string
	// GatingPlugin is the PreEnqueue check that holds the item back, if any.
	GatingPlugin string
	// BackoffExpiry is when the current backoff ends; zero outside backoffQ.
	BackoffExpiry time.Time
	// FlushedFromUnschedulable is true once the leftover flush, not an
	// event, brought the item out of the parking area.
	FlushedFromUnschedulable bool
	// Cycle is the scheduling cycle of the item's latest pop. Pass it back
	// to AddUnschedulableIfNotPresent.
	Cycle int64
}

// Gated reports whether a PreEnqueue check holds the item back.
func (i *Info[T]) Gated() bool { return i.GatingPlugin != "" }

// Location says where an item is.
type Location uint8

// The places an item can be. Gated items are parked too, but counted apart.
const (
	Absent Location = iota
	InActive
	InBackoff
	InUnschedulable
	InGated
	InFlight
)

var locationNames = [...]string{"absent", "active", "backoff", "unschedulable", "gated", "inflight"}

// String returns the lower-case name used in metrics and JSON: "active",
// "backoff", "unschedulable", "gated", "inflight" or "absent".
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
}

// Pending is the number of queued items: every place but in flight.
func (c Counts) Pending() int { return c.Active + c.Backoff + c.Unschedulable + c.Gated }

// ByPriority returns the default ordering (the QueueSort extension point):
// higher priority first, then earlier Timestamp.
func ByPriority[T any](priority func(T) int32) func(a, b *Info[T]) bool {
	return func(a, b *Info[T]) bool {
		pa, pb := priority(a.Item), priority(b.Item)
		if pa != pb {
			return pa > pb
		}
		return a.Timestamp.Before(b.Timestamp)
	}
}
