package scheduler

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
)

// APIReleaser releases gangs against the API server, each in its own
// goroutine: for each member, a GangReleased warning event with the
// reason, then its deletion, with its UID as a precondition so that a pod
// recreated under the same name is not touched. Safe for concurrent use.
type APIReleaser struct {
	Client   kubernetes.Interface
	Recorder events.EventRecorder // nil: no events
	Timeout  time.Duration        // per request; default 30s
	running  sync.WaitGroup
}

// Release implements Releaser.
func (r *APIReleaser) Release(ctx context.Context, group string, members []*v1.Pod, reason string, done func(errs []error)) {
	r.running.Add(1)
	go func() {
		defer r.running.Done()
		var errs []error
		for _, p := range members {
			if err := r.release(ctx, p, reason); err != nil {
				errs = append(errs, fmt.Errorf("delete %s/%s of group %s: %w", p.Namespace, p.Name, group, err))
			}
		}
		done(errs)
	}()
}

// Wait waits for the releases under way to end.
func (r *APIReleaser) Wait() { r.running.Wait() }

func (r *APIReleaser) release(ctx context.Context, p *v1.Pod, reason string) error {
	if r.Recorder != nil {
		r.Recorder.Eventf(p, nil, v1.EventTypeWarning, "GangReleased", "Deleting", "%s", reason)
	}
	timeout := r.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	uid := p.UID
	err := r.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone already, or a new pod of the same name
	}
	return err
}
