package cluster

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// fatalRecorder is a testing.TB whose Fatal records the message and ends
// the goroutine, as t.Fatal does, without failing the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	runtime.Goexit()
}

// TestWaitPods: WaitPods returns at the change it waits for, seen on its
// watch, not at a later poll; a change that never comes fails it at the
// timeout, naming what it waited for. In a synctest bubble, on a fake
// clientset: virtual time tells exactly when it returned.
func TestWaitPods(t *testing.T) {
	for _, tc := range []struct {
		name      string
		bindAfter time.Duration // 0: never
		wantAfter time.Duration
		wantFatal string
	}{
		{name: "bound later", bindAfter: time.Minute, wantAfter: time.Minute},
		{name: "never bound", wantAfter: 2 * time.Minute, wantFatal: "waiting for p bound: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
				c := fake.NewClientset(p)
				if tc.bindAfter > 0 {
					go func() {
						time.Sleep(tc.bindAfter)
						b := p.DeepCopy()
						b.Spec.NodeName = "n"
						if _, err := c.CoreV1().Pods("ns").Update(context.Background(), b, metav1.UpdateOptions{}); err != nil {
							t.Error(err)
						}
					}()
				}
				start := time.Now()
				rec := &fatalRecorder{TB: t}
				done := make(chan struct{})
				go func() {
					defer close(done)
					WaitPods(rec, c, "ns", 2*time.Minute, "p bound", func(pods map[string]*v1.Pod) bool {
						return pods["p"] != nil && pods["p"].Spec.NodeName != ""
					}, func(map[string]*v1.Pod) string { return "p unbound" })
				}()
				<-done
				if took := time.Since(start); took != tc.wantAfter {
					t.Errorf("WaitPods returned after %v, want %v", took, tc.wantAfter)
				}
				if tc.wantFatal == "" && rec.msg != "" {
					t.Errorf("WaitPods failed: %s", rec.msg)
				}
				if tc.wantFatal != "" && (!strings.HasPrefix(rec.msg, tc.wantFatal) || !strings.HasSuffix(rec.msg, "; p unbound")) {
					t.Errorf("WaitPods failed with %q, want %q ... and the pods described", rec.msg, tc.wantFatal)
				}
			})
		})
	}
}
