package scheduler

import (
	"bytes"
	"encoding/json"
	"slices"
	"sync"

	"github.com/cespare/xxhash/v2"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodHintClass is the queue's Config.HintClass on the framework path
// (UseFrameworkHints sets it): pods whose namespace, labels, annotations
// (less InertAnnotations), owner references and whole spec are equal
// share a class, as the replicas of one Deployment or the members of one
// gang do; any other pod has a class of its own.
//
// Why it is sound: the queue asks a hint once per class only within a
// move request (Move) and within a group entity. kube-scheduler v1.37.2's
// queueing hints, and schedq's own GangScheduling hint that the framework
// path keeps, read of the pod they judge only its namespace, labels, owner
// (through the default spread selector) and spec, besides the event's
// objects and the cluster's state, which are the same for every pod of a
// request. The exceptions make a pod unshareable (it gets its own class):
//   - resource claims (DynamicResources reads the claims' names from the
//     pod's status, and DRA-backed extended resources name their claims
//     after the pod);
//   - generic ephemeral volumes (their claims are named after the pod);
//   - container statuses or a resize condition (an in-place resize makes
//     the requests and NodeResourcesFit's answers depend on the status).
//
// The annotations are in the class although no hint reads a pod's
// annotations (kube-scheduler v1.37.2's plugins read those of claims,
// PVCs, nodes and CSINodes only; schedq's plugins none), because a plugin
// configured beside them may. InertAnnotations, schedq's own that nothing
// reads while scheduling, are left out.
//
// No hint compares the judged pod's identity (name, UID) with the
// event's object: the events about a pod itself (TargetPod) reach a
// parked pod through Queue.Update, which asks that pod alone, and the
// pods that Move carries as objects (assigned, deleted or newly queued
// pods) have left the parking area or are judged by hints that compare
// only the fields above (GangScheduling's group name). The property test
// of the default profile checks all of this on random pods and events.
//
// Two shared classes are equal only if the encodings are (a 64-bit hash:
// a collision between two templates is a 2^-64 chance). The encoding
// does not canonicalise quantities ("1" and "1000m" are two classes),
// which only costs sharing. Shared classes are even and own classes
// odd, so the two never meet.
//
// Cost: one JSON encoding of the pod's metadata and spec, O(size of the
// pod), when the queue parks or updates the pod. It writes nothing to the
// pod and is safe for concurrent use.
func PodHintClass(p *v1.Pod) uint64 {
	if !shareable(p) {
		return ownClass(p)
	}
	buf := classBufs.Get().(*bytes.Buffer)
	defer classBufs.Put(buf)
	buf.Reset()
	v := classView{NS: p.Namespace, Labels: p.Labels, Annotations: classAnnotations(p.Annotations), Owners: p.OwnerReferences, Spec: &p.Spec}
	if err := json.NewEncoder(buf).Encode(&v); err != nil {
		return ownClass(p)
	}
	return xxhash.Sum64(buf.Bytes()) &^ 1
}

// ExpectedRuntimeAnnotation is the annotation in which a pod declares how
// long it expects to run once started (a Go duration). Only forecasts read
// it (see the simulator's RuntimeAnnotation).
const ExpectedRuntimeAnnotation = "schedq.io/expected-runtime"

// InertAnnotations are the annotations PodHintClass leaves out: no
// scheduling plugin and no queueing hint reads them. ExpectedRuntimeAnnotation
// is read by forecasts only, to end a started pod; FailureAnnotation by
// the failover's warm start only, to park a pod as it is added or updated
// (never by a hint), and its value differs from pod to pod (the cluster's
// fingerprints when each failed). Both vary between replicas of one
// template, which would split the template's class.
var InertAnnotations = []string{ExpectedRuntimeAnnotation, FailureAnnotation}

// classAnnotations returns a, less InertAnnotations: a itself if it holds
// none of them, else a copy without them. O(len(a)) when it copies.
func classAnnotations(a map[string]string) map[string]string {
	inert := 0
	for _, k := range InertAnnotations {
		if _, ok := a[k]; ok {
			inert++
		}
	}
	if inert == 0 {
		return a
	}
	out := make(map[string]string, len(a)-inert)
	for k, v := range a {
		if !slices.Contains(InertAnnotations, k) {
			out[k] = v
		}
	}
	return out
}

// classView is what PodHintClass encodes of a pod.
type classView struct {
	NS          string                  `json:"n"`
	Labels      map[string]string       `json:"l,omitempty"`
	Annotations map[string]string       `json:"a,omitempty"`
	Owners      []metav1.OwnerReference `json:"o,omitempty"`
	Spec        *v1.PodSpec             `json:"s"`
}

var classBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// ownClass is p's class when p shares none: odd, from its UID, namespace
// and name.
func ownClass(p *v1.Pod) uint64 {
	d := xxhash.New()
	d.WriteString(string(p.UID))
	d.WriteString("\x00")
	d.WriteString(p.Namespace)
	d.WriteString("\x00")
	d.WriteString(p.Name)
	return d.Sum64() | 1
}

// shareable reports whether p's hint answers depend only on the fields
// PodHintClass encodes (see there). O(volumes + conditions).
func shareable(p *v1.Pod) bool {
	if len(p.Spec.ResourceClaims) > 0 || len(p.Status.ResourceClaimStatuses) > 0 ||
		p.Status.ExtendedResourceClaimStatus != nil || len(p.Status.NodeAllocatableResourceClaimStatuses) > 0 ||
		len(p.Status.ContainerStatuses) > 0 || len(p.Status.InitContainerStatuses) > 0 {
		return false
	}
	for i := range p.Spec.Volumes {
		if p.Spec.Volumes[i].Ephemeral != nil {
			return false
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodResizePending || c.Type == v1.PodResizeInProgress {
			return false
		}
	}
	return true
}
