package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

// TestLiveStateUnderSchedulingIsRaceFree: the whole scheduler on a fake
// clientset, three nodes of one device each and six pods that each claim
// one. While it schedules and binds them (DynamicResources reserving and
// writing their claims), goroutines ask for forecasts and what-ifs (one
// claiming from a template, one a named claim) and the cluster changes
// (templates and claims added, pods added and deleted: informer events).
// Under -race nothing the live state reads is written unordered; every
// answer is an answer (200, or 429 when a what-if is already running);
// and once all is settled, three pods are bound, their claims hold three
// different devices, and a what-if pod that claims a device does not fit
// now: the state agrees with the scheduler's.
func TestLiveStateUnderSchedulingIsRaceFree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		objs := []runtime.Object{testNode("n1", "4"), testNode("n2", "4"), testNode("n3", "4"),
			&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, draClass(), draTemplate("one-gpu"),
			draClaim("spare", testDriver)}
		for i := range 3 {
			objs = append(objs, draSlice(fmt.Sprintf("n%d", i+1)))
		}
		for i := range 6 {
			claim := fmt.Sprintf("c%d", i)
			objs = append(objs, draClaim(claim, testDriver), claimingPod(fmt.Sprintf("p%d", i), claim))
		}
		client := fakeCluster(objs...)
		o := upstreamOptions(t)
		handlers := make(chan http.Handler, 1)
		o.serving = func(h http.Handler) { handlers <- h }
		runUpstream(t, client, o)
		h := <-handlers
		const rounds = 6
		var wg sync.WaitGroup
		for _, pod := range []string{templatePod, strings.Replace(whatIfClaimOther, "other", "spare", 1)} {
			wg.Go(func() {
				for range rounds {
					if code, body := serve(h, http.MethodPost, "/debug/whatif", pod); code != http.StatusOK && code != http.StatusTooManyRequests {
						t.Errorf("what-if: HTTP %d %s", code, body)
					}
				}
			})
		}
		wg.Go(func() {
			for range rounds {
				if code, body := serve(h, http.MethodGet, "/debug/queue?order=pop&format=text", ""); code != http.StatusOK {
					t.Errorf("forecast: HTTP %d %s", code, body)
				}
			}
		})
		wg.Go(func() { changeCluster(t, client, rounds) })
		wg.Wait()
		synctest.Wait()
		devices := map[string]string{}
		var bound int
		for i := range 6 {
			name := fmt.Sprintf("p%d", i)
			if nodeOf(t, client, name) == "" {
				continue
			}
			bound++
			c, err := client.ResourceV1().ResourceClaims("default").Get(context.Background(), fmt.Sprintf("c%d", i), metav1.GetOptions{})
			if err != nil || c.Status.Allocation == nil || len(c.Status.Allocation.Devices.Results) != 1 {
				t.Fatalf("claim of bound %s: %v %+v", name, err, c)
			}
			r := c.Status.Allocation.Devices.Results[0]
			dev := r.Pool + "/" + r.Device
			if other, ok := devices[dev]; ok {
				t.Errorf("device %s given to %s and %s", dev, other, name)
			}
			devices[dev] = name
		}
		if bound != 3 {
			t.Errorf("%d pods bound, want 3 (one per device)", bound)
		}
		code, body := serve(h, http.MethodPost, "/debug/whatif", strings.Replace(whatIfClaimOther, "other", "spare", 1))
		var a whatIfAnswer
		if err := json.Unmarshal([]byte(body), &a); code != http.StatusOK || err != nil || len(a.Pods) != 1 {
			t.Fatalf("what-if: HTTP %d %v %s", code, err, body)
		}
		if a.Pods[0].FitsNow {
			t.Errorf("what-if: %+v, want it not to fit now: every device is held", a.Pods[0])
		}
	})
}

// changeCluster adds and deletes templates, claims and pods, rounds
// times: informer events for the scheduler and the live state.
func changeCluster(t *testing.T, client *fake.Clientset, rounds int) {
	ctx := context.Background()
	for i := range rounds {
		tpl := draTemplate(fmt.Sprintf("t%d", i))
		if _, err := client.ResourceV1().ResourceClaimTemplates("default").Create(ctx, tpl, metav1.CreateOptions{}); err != nil {
			t.Errorf("create template: %v", err)
		}
		claim := fmt.Sprintf("x%d", i)
		if _, err := client.ResourceV1().ResourceClaims("default").Create(ctx, draClaim(claim, testDriver), metav1.CreateOptions{}); err != nil {
			t.Errorf("create claim: %v", err)
		}
		p := claimingPod(fmt.Sprintf("x%d", i), claim)
		if _, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Errorf("create pod: %v", err)
		}
		if err := client.CoreV1().Pods("default").Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete pod: %v", err)
		}
		if err := client.ResourceV1().ResourceClaimTemplates("default").Delete(ctx, tpl.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete template: %v", err)
		}
	}
}

// serve answers one request of h.
func serve(h http.Handler, method, target, body string) (int, string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, strings.NewReader(body)))
	return rec.Code, rec.Body.String()
}
