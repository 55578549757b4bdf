package app

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// draTemplate is a ResourceClaimTemplate of default asking for one
// device of testDriver.
func draTemplate(name string) *resourceapi.ResourceClaimTemplate {
	c := draClaim(name, testDriver)
	return &resourceapi.ResourceClaimTemplate{ObjectMeta: c.ObjectMeta,
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: c.Spec}}
}

// templatePod is a what-if pod that claims a device from the template
// one-gpu.
const templatePod = `apiVersion: v1
kind: Pod
metadata: {name: w, namespace: default}
spec:
  containers: [{name: c, image: x, resources: {requests: {cpu: 100m}, claims: [{name: gpu}]}}]
  resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
`

// TestWhatIfClaimFromATemplate: the whole scheduler on a fake clientset,
// with n1's one device free. A what-if pod that claims a device from a
// ResourceClaimTemplate of the cluster fits now on n1 and starts at once:
// the forecast's state carries the templates, from which the simulator
// makes the pod's claim as the resourceclaim controller would. Without
// them the pod's claim was never made, and it was answered "does not fit
// now", never starting. One whose template the cluster does not have is
// refused (400).
func TestWhatIfClaimFromATemplate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fakeCluster(testNode("n1", "2"), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
			draClass(), draSlice("n1"), draTemplate("one-gpu"))
		o := upstreamOptions(t)
		handlers := make(chan http.Handler, 1)
		o.serving = func(h http.Handler) { handlers <- h }
		runUpstream(t, client, o)
		h := <-handlers
		pod := templatePod
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/debug/whatif", strings.NewReader(pod)))
		var a whatIfAnswer
		if err := json.Unmarshal(rec.Body.Bytes(), &a); rec.Code != http.StatusOK || err != nil || len(a.Pods) != 1 {
			t.Fatalf("HTTP %d %v: %s", rec.Code, err, rec.Body)
		}
		if p := a.Pods[0]; !p.FitsNow || p.Node != "n1" || !p.Forecast.Starts || p.Forecast.Wait > time.Second {
			t.Errorf("got %+v, want it to fit now on n1 and start at once", p)
		}
		// A template the cluster does not have: refused, as a missing
		// PodGroup is (sim.TestWhatIfRefusesMissingClaims).
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/debug/whatif", strings.NewReader(strings.Replace(pod, "one-gpu", "nope", 1))))
		if want := "ResourceClaimTemplate default/nope (spec.resourceClaims gpu) does not exist"; rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("a missing template: HTTP %d %s, want 400 with %q", rec.Code, rec.Body, want)
		}
	})
}

// TestTemplatesUnlistedHoldUpNothing: ResourceClaimTemplates not listed
// yet (the list is under way, or refused by a role that does not grant
// it: kube-scheduler's own does not) hold up neither the scheduler's
// start nor its scheduling, which the templates' informer being the
// shared factory's would (the start waits for that factory's sync); a
// what-if pod that claims from a template is then refused, saying why,
// rather than answered as if no device were free.
func TestTemplatesUnlistedHoldUpNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fakeCluster(testNode("n1", "2"), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
			draClass(), draSlice("n1"), draTemplate("one-gpu"), uidPod("p"))
		client.PrependReactor("list", "resourceclaimtemplates", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(resourceapi.Resource("resourceclaimtemplates"), "", errors.New("not granted"))
		})
		o := upstreamOptions(t)
		handlers := make(chan http.Handler, 1)
		o.serving = func(h http.Handler) { handlers <- h }
		runUpstream(t, client, o)
		if n := nodeOf(t, client, "p"); n != "n1" {
			t.Fatalf("p is on %q, want n1: the scheduler waited for the templates", n)
		}
		h := <-handlers
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/debug/whatif", strings.NewReader(templatePod)))
		if want := "the scheduler has not listed the templates"; rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("HTTP %d %s, want 400 with %q", rec.Code, rec.Body, want)
		}
	})
}

// TestTemplateWatchErrorsWarnOnce: of the templates' informer's errors,
// the first that keeps the templates unlisted (a forbidden list) is a
// warning, and the rest are at debug level; a watch that ends as every
// watch does (closed, expired) is never a warning, even first.
func TestTemplateWatchErrorsWarnOnce(t *testing.T) {
	var b strings.Builder
	log := slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := templateWatchErrors(log)
	forbidden := apierrors.NewForbidden(resourceapi.Resource("resourceclaimtemplates"), "", errors.New("not granted"))
	for _, err := range []error{io.EOF, apierrors.NewResourceExpired("too old"), forbidden, forbidden} {
		h(context.Background(), nil, err)
	}
	var levels []string
	for line := range strings.Lines(b.String()) {
		_, rest, _ := strings.Cut(line, "level=")
		level, _, _ := strings.Cut(rest, " ")
		levels = append(levels, level)
	}
	if got := strings.Join(levels, ","); got != "DEBUG,DEBUG,WARN,DEBUG" {
		t.Errorf("levels %s, want DEBUG,DEBUG,WARN,DEBUG:\n%s", got, b.String())
	}
}
