// Package framework holds schedq's own view of pods and nodes, which its
// scheduler's cache, wake budgets and handlers read: pods with their
// requests computed once, nodes with the pods on them and their sums, and
// the interfaces of schedq's own plugins (the gang quorum, its hints).
// Scheduling itself runs kube-scheduler's framework (kube/profile).
package framework

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/kubernetes/pkg/features"

	"github.com/schedq/schedq"
)

// Key is a pod's identity in the queue: its namespace and name.
func Key(p *v1.Pod) types.NamespacedName {
	return types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
}

// Priority is a pod's spec.priority, 0 if unset.
func Priority(p *v1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

// AffinityTerm is a parsed required pod (anti-)affinity term.
type AffinityTerm struct {
	Namespaces        sets.Set[string]
	NamespaceSelector labels.Selector // nil: only Namespaces
	Selector          labels.Selector
	TopologyKey       string
}

// Matches reports whether pod (whose namespace has labels nsLabels) is
// selected by the term.
func (t AffinityTerm) Matches(pod *v1.Pod, nsLabels labels.Set) bool {
	if !t.Namespaces.Has(pod.Namespace) && (t.NamespaceSelector == nil || !t.NamespaceSelector.Matches(nsLabels)) {
		return false
	}
	return t.Selector.Matches(labels.Set(pod.Labels))
}

// PodInfo is a pod with the data scheduling needs, computed once.
type PodInfo struct {
	Pod *v1.Pod
	// Requests are the pod's effective requests: containers, init
	// containers (as the kubelet runs them) and overhead, plus one pod.
	Requests Resource
	// InvalidRequests says why the requests cannot be accounted (an
	// amount overflows int64 or is negative), nil if they can. Requests
	// then holds the clamped amounts (see
	// ConvertResources); such a pod must not be scheduled.
	InvalidRequests      error
	RequiredAffinity     []AffinityTerm
	RequiredAntiAffinity []AffinityTerm
}

// NewPodInfo computes a pod's scheduling data. It fails on a malformed
// label selector in the pod's affinity. Requests that cannot be accounted
// are not an error here but are recorded in InvalidRequests, so that the
// pod can still be accounted on a node if something else bound it.
func NewPodInfo(p *v1.Pod) (*PodInfo, error) {
	pi := &PodInfo{Pod: p}
	pi.setRequests()
	if a := p.Spec.Affinity; a != nil {
		var err error
		if a.PodAffinity != nil {
			if pi.RequiredAffinity, err = parseTerms(p, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution); err != nil {
				return nil, fmt.Errorf("pod affinity: %w", err)
			}
		}
		if a.PodAntiAffinity != nil {
			if pi.RequiredAntiAffinity, err = parseTerms(p, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution); err != nil {
				return nil, fmt.Errorf("pod anti-affinity: %w", err)
			}
		}
	}
	return pi, nil
}

// PodRequests converts a pod's effective requests, plus one pod, and says
// whether they can be accounted (nil error) or why not. They are counted
// as kube-scheduler counts a pod on a node (RequestOptions): for a pod
// resized in place, the most of its spec and of what its status says is
// allocated and running.
// A pod with plain requests (see SamePlainRequests) that requests what
// the last such pod did gets that pod's requests without computing them.
func PodRequests(p *v1.Pod) (Resource, error) {
	if l := lastPlain.Load(); l != nil {
		if r, ok := l.requests(p); ok {
			return r, nil
		}
	}
	r, err := computeRequests(p)
	if err == nil && plainRequests(p) {
		lastPlain.Store(newPlainMemo(p, r))
	}
	return r, err
}

// computeRequests is PodRequests without the memo.
func computeRequests(p *v1.Pod) (Resource, error) {
	r, err := ConvertResources(resourcehelper.PodRequests(p, RequestOptions()))
	r.Pods = 1
	if err != nil {
		return r, fmt.Errorf("invalid resource request %w", err)
	}
	return r, nil
}

// RequestOptions are the options with which kube-scheduler v1.37.2
// counts a pod's requests in its node cache and in its pod scale events,
// after the feature gates: the status's resources (in-place resize, GA)
// and pod-level ones. For a pending pod, which has no container status,
// they count its spec. O(1).
func RequestOptions() resourcehelper.PodResourcesOptions {
	gates := utilfeature.DefaultFeatureGate
	return resourcehelper.PodResourcesOptions{
		UseStatusResources: gates.Enabled(features.InPlacePodVerticalScaling),
		InPlacePodLevelResourcesVerticalScalingEnabled: gates.Enabled(features.InPlacePodLevelResourcesVerticalScaling),
		SkipPodLevelResources:                          !gates.Enabled(features.PodLevelResources),
		UseDRANodeAllocatableResourceClaimStatus:       gates.Enabled(features.DRANodeAllocatableResources),
	}
}

func (pi *PodInfo) setRequests() {
	pi.Requests, pi.InvalidRequests = PodRequests(pi.Pod)
}

func parseTerms(p *v1.Pod, terms []v1.PodAffinityTerm) ([]AffinityTerm, error) {
	out := make([]AffinityTerm, 0, len(terms))
	for _, term := range terms {
		sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
		if err != nil {
			return nil, err
		}
		t := AffinityTerm{Namespaces: sets.New(term.Namespaces...), Selector: sel, TopologyKey: term.TopologyKey}
		if term.NamespaceSelector != nil {
			if t.NamespaceSelector, err = metav1.LabelSelectorAsSelector(term.NamespaceSelector); err != nil {
				return nil, err
			}
		}
		if len(term.Namespaces) == 0 && term.NamespaceSelector == nil {
			t.Namespaces.Insert(p.Namespace) // the pod's own namespace
		}
		out = append(out, t)
	}
	return out, nil
}

// NodeInfo is a node with the pods on it (bound or assumed) and their sums.
type NodeInfo struct {
	Pods        []*PodInfo
	Allocatable Resource
	// Requested sums the pods' Requests; it saturates rather than wraps.
	Requested Resource
	name      string
	Node      *v1.Node
	// AllocatableInvalid says which allocatable amounts were clamped (see
	// ConvertResources), nil if none was.
	AllocatableInvalid error
}

// NewNodeInfo returns an empty NodeInfo for node.
func NewNodeInfo(node *v1.Node) *NodeInfo {
	n := &NodeInfo{}
	n.SetNode(node)
	return n
}

// SetNode replaces the node object (on an update), keeping the pods.
func (n *NodeInfo) SetNode(node *v1.Node) {
	n.Node = node
	n.name = node.Name
	n.Allocatable, n.AllocatableInvalid = ConvertResources(node.Status.Allocatable)
}

// Name returns the node's name.
func (n *NodeInfo) Name() string { return n.name }

// AddPod accounts pod on the node.
func (n *NodeInfo) AddPod(p *PodInfo) {
	n.Pods = append(n.Pods, p)
	n.Requested.Add(p.Requests)
}

// RemovePod removes the pod with key from the node and reports whether it
// was there. A sum that saturated is counted again from the pods left.
func (n *NodeInfo) RemovePod(key types.NamespacedName) bool {
	i := slices.IndexFunc(n.Pods, func(p *PodInfo) bool { return Key(p.Pod) == key })
	if i < 0 {
		return false
	}
	p := n.Pods[i]
	n.Pods = slices.Delete(n.Pods, i, i+1)
	if n.Requested.Saturated() {
		n.recount()
	} else {
		n.Requested.Sub(p.Requests)
	}
	return true
}

// recount sums the pods' requests from scratch.
func (n *NodeInfo) recount() {
	n.Requested = Resource{}
	for _, p := range n.Pods {
		n.Requested.Add(p.Requests)
	}
}

// Snapshot is the scheduler cache's nodes and namespaces, as Cache.View
// shows them under its read lock.
type Snapshot interface {
	// Nodes lists every node, in a stable order.
	Nodes() []*NodeInfo
	// Node returns the named node.
	Node(name string) (*NodeInfo, bool)
	// NamespaceLabels returns a namespace's labels, for namespace selectors.
	NamespaceLabels(ns string) labels.Set
}

// Plugin is anything with a name.
type Plugin interface{ Name() string }

// EnqueueExtensions lists the cluster events that may make a pod this
// plugin rejected schedulable, each with a queueing hint. Hints run under
// the queue's lock and must be pure and fast.
type EnqueueExtensions interface {
	Plugin
	EventsToRegister() []schedq.EventHint[*v1.Pod]
}
