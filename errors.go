package schedq

import "errors"

// Sentinel errors. Operations wrap them with the key or field involved, so
// test them with errors.Is.
var (
	// ErrClosed: the queue was closed.
	ErrClosed = errors.New("schedq: queue closed")
	// ErrNotFound: no queued item has the key.
	ErrNotFound = errors.New("schedq: item not found")
	// ErrNotInFlight: the key has no attempt in flight of the given cycle:
	// a second Done for the same pop, or a Done or requeue from an attempt
	// that a newer pop of the key superseded.
	ErrNotInFlight = errors.New("schedq: item not in flight")
	// ErrAlreadyQueued: a failed attempt was requeued while a newer copy of
	// the item was already queued; the newer copy stays, the attempt ends.
	ErrAlreadyQueued = errors.New("schedq: item already queued")
	// ErrInvalidConfig: a Config field is wrong; the message names it.
	ErrInvalidConfig = errors.New("schedq: invalid config")
	// ErrInvalidGroup: a GroupSpec field is wrong, or groups are not
	// configured (Config.Group is nil); the message names the field.
	ErrInvalidGroup = errors.New("schedq: invalid group")
)
