package bubbles

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// TestErrorsAfterABubbleDoNotSleep: an error outside a bubble, then two
// inside it an hour and a half of fake time apart, then one outside
// again. With the default handlers the last one sleeps about an hour and
// a half (the bubble's second error is stamped that far ahead of the real
// clock); with NoErrorRateLimit it returns at once. The 10 s bound only
// tells a hang from a return.
func TestErrorsAfterABubbleDoNotSleep(t *testing.T) {
	defaults := utilruntime.ErrorHandlers
	t.Cleanup(func() { utilruntime.ErrorHandlers = defaults })
	NoErrorRateLimit()
	utilruntime.HandleError(errors.New("outside, first"))
	synctest.Test(t, func(t *testing.T) {
		utilruntime.HandleError(errors.New("in the bubble"))
		time.Sleep(90 * time.Minute)
		utilruntime.HandleError(errors.New("in the bubble, later"))
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		utilruntime.HandleError(errors.New("outside, after"))
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("HandleError on the real clock still sleeping after 10s: the bubble's errors poisoned its rate limit")
	}
}
