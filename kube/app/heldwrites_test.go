package app

import (
	"context"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	resourcev1 "k8s.io/client-go/kubernetes/typed/resource/v1"
)

// heldWrites is a clientset whose ResourceClaim updates, pod deletions
// and bindings ("pods", "binding") call hold(resource, subresource) first,
// outside the fake clientset's lock, so that a test can keep such a
// request in flight. A reactor must not block for that: the fake runs its
// reactors under one lock of the whole clientset, so every other request
// (an informer's watch among them) would wait on a mutex, which synctest
// does not count as durably blocked, and the bubble's clock would stop
// for good. That hung TestWhatIfDuringClaimBindingIsRaceFree in 1 of 20
// runs under -race, when the templates informer's watch came after the
// claim's update had been held.
type heldWrites struct {
	*fake.Clientset
	hold func(resource, subresource string)
}

var _ kubernetes.Interface = heldWrites{}

func (c heldWrites) ResourceV1() resourcev1.ResourceV1Interface {
	return heldResourceV1{c.Clientset.ResourceV1(), c.hold}
}

func (c heldWrites) CoreV1() corev1.CoreV1Interface {
	return heldCoreV1{c.Clientset.CoreV1(), c.hold}
}

type heldResourceV1 struct {
	resourcev1.ResourceV1Interface
	hold func(resource, subresource string)
}

func (r heldResourceV1) ResourceClaims(ns string) resourcev1.ResourceClaimInterface {
	return heldClaims{r.ResourceV1Interface.ResourceClaims(ns), r.hold}
}

type heldClaims struct {
	resourcev1.ResourceClaimInterface
	hold func(resource, subresource string)
}

func (c heldClaims) Update(ctx context.Context, claim *resourceapi.ResourceClaim, o metav1.UpdateOptions) (*resourceapi.ResourceClaim, error) {
	c.hold("resourceclaims", "")
	return c.ResourceClaimInterface.Update(ctx, claim, o)
}

// UpdateStatus is held by hold, then sent to the fake server; as Bind,
// it answers the caller's context's error if that ended meanwhile,
// whatever the server did (the status may have been written).
func (c heldClaims) UpdateStatus(ctx context.Context, claim *resourceapi.ResourceClaim, o metav1.UpdateOptions) (*resourceapi.ResourceClaim, error) {
	c.hold("resourceclaims", "status")
	out, err := c.ResourceClaimInterface.UpdateStatus(ctx, claim, o)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return out, err
}

type heldCoreV1 struct {
	corev1.CoreV1Interface
	hold func(resource, subresource string)
}

func (c heldCoreV1) Pods(ns string) corev1.PodInterface {
	return heldPods{c.CoreV1Interface.Pods(ns), c.hold}
}

type heldPods struct {
	corev1.PodInterface
	hold func(resource, subresource string)
}

func (p heldPods) Delete(ctx context.Context, name string, o metav1.DeleteOptions) error {
	p.hold("pods", "")
	return p.PodInterface.Delete(ctx, name, o)
}

// Bind is a binding whose request is held by hold, then sent to the
// fake server. If the caller's context ended meanwhile, the caller sees
// the context's error whatever the server did: as with a real client
// that stops waiting for the answer of a request already sent, the
// binding may have been made all the same.
func (p heldPods) Bind(ctx context.Context, b *v1.Binding, o metav1.CreateOptions) error {
	p.hold("pods", "binding")
	err := p.PodInterface.Bind(ctx, b, o)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
