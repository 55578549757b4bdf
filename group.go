package schedq

import (
	"fmt"
	"time"
)

// GroupSpec is what the caller knows of a group object.
type GroupSpec struct {
	// MinCount is how many members an attempt must place to succeed; >= 1.
	MinCount int
	// Priority orders the group in activeQ under the default order
	// (Config.Priority); members' own priorities do not count.
	Priority int32
}

// validate reports a wrong field of s, wrapping ErrInvalidGroup.
func (s GroupSpec) validate(name string) error {
	if name == "" {
		return fmt.Errorf("%w: name must not be empty", ErrInvalidGroup)
	}
	if s.MinCount < 1 {
		return fmt.Errorf("%w: group %q: MinCount must be >= 1, got %d", ErrInvalidGroup, name, s.MinCount)
	}
	return nil
}

// SetGroup adds or updates the group object name. Members that waited for
// it (InIncomplete) form the group's entity; a lowered MinCount may wake
// the group if it is parked. A bad spec is an error wrapping
// ErrInvalidGroup that names the field, and changes nothing. O(m log n)
// for m members that waited.
func (c *Core[K, T]) SetGroup(name string, spec GroupSpec, now time.Time) error {
	defer c.check()
	if c.cfg.Group == nil {
		return fmt.Errorf("%w: Config.Group is nil", ErrInvalidGroup)
	}
	if err := spec.validate(name); err != nil {
		return err
	}
	return fmt.Errorf("%w: groups are not implemented yet", ErrInvalidGroup)
}

// DeleteGroup forgets the group object name: its queued and pending
// members go back to wait for it (InIncomplete). It returns an error
// wrapping ErrNotFound if the group is unknown. O(m) for m members.
func (c *Core[K, T]) DeleteGroup(name string, now time.Time) error {
	defer c.check()
	return fmt.Errorf("%w: group %q", ErrNotFound, name)
}
