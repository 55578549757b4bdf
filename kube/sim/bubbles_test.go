package sim

import "github.com/schedq/schedq/kube/internal/bubbles"

// Some of this package's tests run in synctest bubbles, the others on the
// real clock: see package bubbles.
func init() { bubbles.NoErrorRateLimit() }
