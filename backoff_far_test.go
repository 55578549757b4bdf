package schedq

import (
	"testing"
	"time"
)

// TestBackoffPastTheLastUnixNano checks that a backoff whose expiry lies
// past the latest time in Unix nanoseconds (year 2262), reached after
// many failures under a long MaxBackoff, still holds its item, and does
// not hold up the backoff flush of the others: the expiry must not wrap
// to a time long past.
func TestBackoffPastTheLastUnixNano(t *testing.T) {
	const year = 365 * 24 * time.Hour
	tests := []struct {
		name       string
		noPopFromB bool
		rejectedBy []string
	}{
		{"rejected", false, []string{"Fit"}},
		{"rejected, no pop-from-backoff", true, []string{"Fit"}},
		{"errors", false, nil},
		{"errors, no pop-from-backoff", true, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config[string, job]) {
				c.InitialBackoff, c.MaxBackoff = time.Second, 250*year
				c.DisablePopFromBackoff = tc.noPopFromB
			})
			h.add(mk("a", 1))
			for range 40 { // 2^39 s is past MaxBackoff
				h.attemptFail("a", tc.rejectedBy...)
				h.c.Activate([]string{"a"}, h.now)
			}
			h.attemptFail("a", tc.rejectedBy...)
			h.move(evMachineAdd, nil)
			h.add(mk("b", 1))
			h.attemptFail("b", tc.rejectedBy...)
			h.move(evMachineAdd, nil) // b: after its 1s backoff
			h.c.Tick(h.now)
			h.step(3 * time.Second)
			h.c.Tick(h.now) // a backoff flush
			h.check()
			h.want("a", InBackoff)
			h.want("b", InActive)
			if x, _ := h.c.Explain("a", h.now); !x.BackoffExpiry.After(h.now.Add(200 * year)) {
				t.Fatalf("backoff expiry %v, want past %v", x.BackoffExpiry, h.now.Add(200*year))
			}
		})
	}
}
