package profile

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	backendcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
)

// TestFrameworkOnRealInformers: given a client-go informer factory, the
// plugins list what its informers hold once the caller starts them after
// NewFrameworkOn: the claim and volume of the clientset send the pod to the
// volume's node.
func TestFrameworkOnRealInformers(t *testing.T) {
	cfg, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	pv, pvc := boundClaim()
	client := fake.NewClientset(pv, pvc)
	factory := informers.NewSharedInformerFactory(client, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nodes := []*v1.Node{node("n1", "a"), node("n2", "a")}
	f, err := NewFrameworkOn(ctx, &cfg.Profiles[0], Setup{Snapshot: backendcache.NewSnapshot(nil, nodes), Informers: factory, Client: client})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("%v did not sync", typ)
		}
	}
	res := schedule(t, f, withClaim(pod("with-volume", "")))
	if strings.Join(res.Feasible, ",") != "n2" {
		t.Fatalf("feasible %v (status %v %v), want n2 only", res.Feasible, res.Status, res.Rejected)
	}
}

// TestFrameworkOnRealInformersRefuses: a factory without a client, or with
// objects for the synchronous factory, is refused with a message saying so.
func TestFrameworkOnRealInformersRefuses(t *testing.T) {
	cfg, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset()
	pv, _ := boundClaim()
	for _, tc := range []struct {
		name  string
		setup Setup
		want  string
	}{
		{"no client", Setup{Informers: informers.NewSharedInformerFactory(client, 0)}, "without a client"},
		{"objects", Setup{Informers: informers.NewSharedInformerFactory(client, 0), Client: client, Objects: []runtime.Object{pv}}, "Objects must be empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup.Snapshot = backendcache.NewEmptySnapshot()
			_, err := NewFrameworkOn(context.Background(), &cfg.Profiles[0], tc.setup)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
