package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Every API client asks for protobuf, accepts JSON too, and writes
// protobuf, as kube-scheduler's default clientConnection does: reads,
// a binding, and a lease write. None asks for gzip, as kube-scheduler
// does not.
func TestAPIClientsSpeakProtobuf(t *testing.T) {
	type seen struct{ method, path, accept, contentType, encoding string }
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, seen{r.Method, r.URL.Path, r.Header.Get("Accept"), r.Header.Get("Content-Type"), r.Header.Get("Accept-Encoding")})
		mu.Unlock()
		http.Error(w, "no", http.StatusNotFound)
	}))
	defer srv.Close()
	o := Options{Kubeconfig: writeKubeconfig(t, "proto", srv.URL), QPS: 50, Burst: 100, SchedulerName: "schedq"}
	base, err := apiConfig(o)
	if err != nil {
		t.Fatal(err)
	}
	// Over TLS, as to a real API server: client-go gives a client without
	// TLS options Go's default transport, which asks for gzip whatever the
	// config says.
	base.TLSClientConfig.Insecure = true
	cs, err := newClients(base, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cs.sched.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	cs.sched.CoreV1().Pods("default").Bind(ctx, &v1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Target: v1.ObjectReference{Kind: "Node", Name: "n"}}, metav1.CreateOptions{})
	cs.lease.CoordinationV1().Leases("kube-system").Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "schedq"}}, metav1.CreateOptions{})
	cs.events.CoreV1().Nodes().Get(ctx, "n", metav1.GetOptions{})

	if len(got) != 4 {
		t.Fatalf("requests: %+v, want 4", got)
	}
	for _, r := range got {
		if !strings.HasPrefix(r.accept, runtime.ContentTypeProtobuf) || !strings.Contains(r.accept, runtime.ContentTypeJSON) {
			t.Errorf("%s %s: Accept %q, want protobuf first, then JSON", r.method, r.path, r.accept)
		}
		if r.encoding != "" {
			t.Errorf("%s %s: Accept-Encoding %q, want none", r.method, r.path, r.encoding)
		}
		if r.method == http.MethodPost && r.contentType != runtime.ContentTypeProtobuf {
			t.Errorf("%s %s: Content-Type %q, want %s", r.method, r.path, r.contentType, runtime.ContentTypeProtobuf)
		}
	}
}
