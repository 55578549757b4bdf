package profile

import (
	"bytes"
	"context"
	"testing"
	"testing/synctest"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	backendcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/utils/ptr"
)

// TestSignPodMemoOnRealInformers: on a real cluster's informers, a pod
// equal to the last one signed but for its name reuses its signature (the
// same bytes), and a Service created meanwhile, which the spreading
// signer reads, is seen: the next pod it selects is not signable, as
// upstream's framework says. synctest.Wait lets the informers deliver the
// Service before the next pod is signed.
func TestSignPodMemoOnRealInformers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cancel, client, f := liveFramework(t)
		db := func(name string) *v1.Pod {
			return pod(name, "", func(p *v1.Pod) {
				p.Labels = map[string]string{"app": "db"}
				p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("200m")}
			})
		}
		check := func(p *v1.Pod, signed bool) []byte {
			t.Helper()
			got, want := f.SignPod(t.Context(), p), f.Framework().SignPod(t.Context(), p)
			if !bytes.Equal(got, want) || (got != nil) != signed {
				t.Fatalf("%s: signature %q, upstream's %q, want signed %v", p.Name, got, want, signed)
			}
			return got
		}
		a := check(db("a"), true)
		if b := check(db("b"), true); &a[0] != &b[0] {
			t.Error("b, equal to a but for its name, was signed again")
		}
		svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"},
			Spec: v1.ServiceSpec{Selector: map[string]string{"app": "db"}}}
		if _, err := client.CoreV1().Services("ns").Create(t.Context(), svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		check(db("c"), false)
		cancel()
		synctest.Wait()
	})
}

// TestSignPodMemoSeesDeviceClasses: NodeResourcesFit and
// BalancedAllocation refuse to sign a pod whose extended resource a
// DeviceClass serves (DRAExtendedResource), which they learn from the DRA
// manager's DeviceClass resolver. On a real cluster's informers, a class
// created after a pod of that resource was signed makes the next pod,
// equal to it but for its name, unsignable, as upstream's framework
// says, and a class deleted makes it signable again: the memo does not
// hand out the signature computed before.
func TestSignPodMemoSeesDeviceClasses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cancel, client, f := liveFramework(t)
		gpu := func(name string) *v1.Pod {
			return pod(name, "", func(p *v1.Pod) {
				p.Spec.Containers[0].Resources.Requests["example.com/gpu"] = resource.MustParse("1")
			})
		}
		check := func(p *v1.Pod, signed bool) {
			t.Helper()
			got, want := f.SignPod(t.Context(), p), f.Framework().SignPod(t.Context(), p)
			if !bytes.Equal(got, want) || (got != nil) != signed {
				t.Fatalf("%s: signature %q, upstream's %q, want signed %v", p.Name, got, want, signed)
			}
		}
		class := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"},
			Spec: resourceapi.DeviceClassSpec{ExtendedResourceName: ptr.To("example.com/gpu")}}
		for _, step := range []struct {
			name   string
			write  func() error
			signed bool
		}{
			{"no class", func() error { return nil }, true},
			{"a class serves it", func() error {
				_, err := client.ResourceV1().DeviceClasses().Create(t.Context(), class, metav1.CreateOptions{})
				return err
			}, false},
			{"the class deleted", func() error {
				return client.ResourceV1().DeviceClasses().Delete(t.Context(), class.Name, metav1.DeleteOptions{})
			}, true},
		} {
			if err := step.write(); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			check(gpu(step.name+"-a"), step.signed)
			check(gpu(step.name+"-b"), step.signed)
		}
		cancel()
		synctest.Wait()
	})
}

// liveFramework builds the default profile's framework on a fake
// client's informers, started and synced, with one node in its
// snapshot. The framework is closed when the test ends; call the
// returned cancel (and synctest.Wait) to stop the informers before that.
func liveFramework(t *testing.T) (context.CancelFunc, *fake.Clientset, *Framework) {
	t.Helper()
	cfg, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	ctx, cancel := context.WithCancel(t.Context())
	f, err := NewFrameworkOn(ctx, &cfg.Profiles[0], Setup{Snapshot: backendcache.NewSnapshot(nil, []*v1.Node{node("n1", "a")}), Informers: factory, Client: client})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return cancel, client, f
}
