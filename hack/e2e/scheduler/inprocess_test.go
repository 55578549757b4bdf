package scheduler

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/schedq/schedq/kube/app"
)

// inProcess is a schedq scheduler run by app.Run in the test process.
type inProcess struct {
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error // Run's result, once stopped
}

// runInProcess starts app.Run with o until stop is called or the test
// ends. Fields o leaves unset get the e2e defaults: QPS 500 and burst
// 1000, a discarded log, and the shared cluster's kubeconfig (scoring's
// zero value is LeastAllocated). It does not wait for the scheduler to be ready.
func runInProcess(t *testing.T, o app.Options) *inProcess {
	t.Helper()
	if o.Kubeconfig == "" {
		o.Kubeconfig = cl.Kubeconfig()
	}
	if o.QPS == 0 {
		o.QPS, o.Burst = 500, 1000
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &inProcess{cancel: cancel, done: make(chan error, 1)}
	go func() { p.done <- app.Run(ctx, o) }()
	t.Cleanup(func() { p.stop() })
	return p
}

// stop cancels the scheduler and returns what Run returned; a scheduler
// that has not returned within 30 s is reported as such. Later calls
// return the first call's result.
func (p *inProcess) stop() error {
	p.once.Do(func() {
		p.cancel()
		select {
		case p.err = <-p.done:
		case <-time.After(30 * time.Second):
			p.err = errStuck
		}
	})
	return p.err
}

// exited says whether Run has returned by itself, and with what.
func (p *inProcess) exited() (bool, error) {
	select {
	case err := <-p.done:
		p.done <- err
		return true, err
	default:
		return false, nil
	}
}

// withLease turns on leader election on lease in kube-system as id, with
// a lease of 15 s, a renewal deadline of 10 s and retries every 2 s.
func withLease(o app.Options, lease, id string) app.Options {
	o.LeaderElect, o.LeaseNamespace, o.LeaseName, o.Identity = true, "kube-system", lease, id
	o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 15*time.Second, 10*time.Second, 2*time.Second
	return o
}

// errStuck is stop's result for a scheduler that did not return.
var errStuck = errors.New("the scheduler did not return within 30s of its cancellation")
