package sim

import (
	"fmt"
	"strconv"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// cluster is the simulated API server's state: nodes and pods in creation
// order, by group, so that runs are reproducible.
type cluster struct {
	nodes      map[string]*v1.Node
	nodeGroups map[string][]string
	pods       map[types.NamespacedName]*v1.Pod
	podGroups  map[string][]types.NamespacedName
	uid        int
	// requests holds each pod group's parsed requests, shared by its pods
	// (read-only, like every object here).
	requests map[string]v1.ResourceList
	// templates holds, per pod group whose pods differ only by name and
	// UID, the pod its pods are shallow copies of (see makePod).
	templates map[string]*v1.Pod
	// profiles are the profiles' schedulerNames if there are several,
	// the first the default of the pods' (schedulerOf); nil with one.
	profiles []string
}

func newCluster() *cluster {
	return &cluster{
		nodes: map[string]*v1.Node{}, nodeGroups: map[string][]string{},
		pods: map[types.NamespacedName]*v1.Pod{}, podGroups: map[string][]types.NamespacedName{},
		requests: map[string]v1.ResourceList{}, templates: map[string]*v1.Pod{},
	}
}

func (c *cluster) nextUID() types.UID {
	c.uid++
	return types.UID("uid-" + strconv.Itoa(c.uid))
}

const zoneLabel = "topology.kubernetes.io/zone"

// makeNodes builds a node group's nodes.
func (c *cluster) makeNodes(g NodeGroup) []*v1.Node {
	capacity, _ := resources(g.Capacity)
	if _, ok := capacity[v1.ResourcePods]; !ok {
		capacity[v1.ResourcePods] = *resourceQuantity("110")
	}
	var out []*v1.Node
	for i := range g.Count {
		name := fmt.Sprintf("%s-%d", g.Name, i)
		labels := map[string]string{"kubernetes.io/hostname": name}
		for k, v := range g.Labels {
			labels[k] = v
		}
		if g.Zones > 0 {
			labels[zoneLabel] = fmt.Sprintf("zone-%d", i%g.Zones)
		}
		n := &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: c.nextUID(), Labels: labels},
			Spec:       v1.NodeSpec{Unschedulable: g.Unschedulable},
			Status: v1.NodeStatus{
				// One list for the whole group: nodes are read-only, and
				// updateNode deep-copies before it changes one.
				Capacity: capacity, Allocatable: capacity,
				Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
			},
		}
		for _, t := range g.Taints {
			n.Spec.Taints = append(n.Spec.Taints, t.taint())
		}
		out = append(out, n)
	}
	return out
}

func (t TaintSpec) taint() v1.Taint {
	eff := v1.TaintEffect(t.Effect)
	if eff == "" {
		eff = v1.TaintEffectNoSchedule
	}
	return v1.Taint{Key: t.Key, Value: t.Value, Effect: eff}
}

// makePod builds pod i of a group. The pods of a group whose fields do
// not depend on the pod's index (no claims, whose names may) are shallow
// copies of one template: they share its labels, containers, affinity and
// the rest, read-only like every object here, so that making a pod costs
// its name and UID, and comparing two of them (the signature's reuse)
// stops at the shared parts. O(1) for such a group, else O(the group's
// fields).
func (c *cluster) makePod(g *PodGroup, i int) *v1.Pod {
	if len(g.Claims) > 0 || len(g.ResourceClaims.v) > 0 {
		p := c.buildPod(g, i)
		p.Name, p.UID = podName(g, i), c.nextUID()
		return p
	}
	t, ok := c.templates[g.Name]
	if !ok {
		t = c.buildPod(g, 0)
		c.templates[g.Name] = t
	}
	p := &v1.Pod{ObjectMeta: t.ObjectMeta, Spec: t.Spec}
	p.Name, p.UID = podName(g, i), c.nextUID()
	return p
}

func podName(g *PodGroup, i int) string { return g.Name + "-" + strconv.Itoa(i) }

// buildPod builds pod i of a group, without its name and UID.
func (c *cluster) buildPod(g *PodGroup, i int) *v1.Pod {
	ns := g.Namespace
	if ns == "" {
		ns = "default"
	}
	requests, ok := c.requests[g.Name]
	if !ok {
		requests, _ = resources(g.Requests)
		c.requests[g.Name] = requests
	}
	labels := map[string]string{"group": g.Name}
	for k, v := range g.Labels {
		labels[k] = v
	}
	prio := g.Priority
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Labels: labels},
		Spec: v1.PodSpec{
			SchedulerName: c.schedulerOf(g),
			Priority:      &prio,
			NodeSelector:  g.NodeSelector,
			Containers:    []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{Requests: requests}}},
		},
	}
	if len(g.Affinity)+len(g.AntiAffinity) > 0 {
		p.Spec.Affinity = &v1.Affinity{}
		if len(g.Affinity) > 0 {
			p.Spec.Affinity.PodAffinity = &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms(g.Affinity)}
		}
		if len(g.AntiAffinity) > 0 {
			p.Spec.Affinity.PodAntiAffinity = &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms(g.AntiAffinity)}
		}
	}
	for _, t := range g.Tolerations {
		p.Spec.Tolerations = append(p.Spec.Tolerations, v1.Toleration{
			Key: t.Key, Operator: v1.TolerationOperator(t.Operator), Value: t.Value, Effect: v1.TaintEffect(t.Effect),
		})
	}
	for _, gate := range g.SchedulingGates {
		p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, v1.PodSchedulingGate{Name: gate})
	}
	upstreamFields(g, i, p)
	return p
}

func terms(ts []TermSpec) []v1.PodAffinityTerm {
	out := make([]v1.PodAffinityTerm, 0, len(ts))
	for _, t := range ts {
		out = append(out, v1.PodAffinityTerm{
			LabelSelector: &metav1.LabelSelector{MatchLabels: t.MatchLabels},
			TopologyKey:   t.TopologyKey,
		})
	}
	return out
}
