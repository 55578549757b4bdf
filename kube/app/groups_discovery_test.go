package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
)

// TestAskPodGroupsRetriesDiscovery: a discovery request that fails at
// start-up is asked again until it answers, rather than turning gang
// scheduling off for the process's life (it was, with a warning, and
// every pod naming a PodGroup then waited); a start-up that ends first
// returns its error.
func TestAskPodGroupsRetriesDiscovery(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failures int  // discovery requests that fail before one answers
		serves   bool // whether the answer lists podgroups
		cancel   bool // the start-up ends while discovery still fails
		want     bool
		wantErr  bool
		wantAsks int
	}{
		{name: "answers at once", serves: true, want: true, wantAsks: 1},
		{name: "fails twice, then serves PodGroups", failures: 2, serves: true, want: true, wantAsks: 3},
		{name: "fails once, then does not serve them", failures: 1, serves: false, want: false, wantAsks: 2},
		{name: "start-up ends while it fails", failures: 1 << 30, cancel: true, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cs := fake.NewClientset()
				if tc.serves {
					cs.Resources = []*metav1.APIResourceList{{GroupVersion: podGroupVersion, APIResources: []metav1.APIResource{{Name: "podgroups"}}}}
				}
				asks := 0
				cs.PrependReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
					asks++
					if asks <= tc.failures {
						return true, nil, errors.New("connection refused")
					}
					return false, nil, nil
				})
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tc.cancel {
					time.AfterFunc(10*discoveryRetry+discoveryRetry/2, cancel)
				}
				start := time.Now()
				got, err := askPodGroups(ctx, cs, clock.RealClock{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
				if (err != nil) != tc.wantErr || got != tc.want {
					t.Fatalf("askPodGroups = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
				}
				if tc.cancel {
					if asks != 11 {
						t.Errorf("asked %d times in 10.5 retry periods, want 11", asks)
					}
					return
				}
				if asks != tc.wantAsks {
					t.Errorf("asked %d times, want %d", asks, tc.wantAsks)
				}
				if waited, want := time.Since(start), time.Duration(tc.failures)*discoveryRetry; waited != want {
					t.Errorf("answered after %v, want %v (a retry every %v)", waited, want, discoveryRetry)
				}
			})
		})
	}
}
