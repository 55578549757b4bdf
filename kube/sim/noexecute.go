package sim

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/schedq/schedq/kube/framework"
)

// evictIntolerant plays kube-controller-manager's taint-eviction
// controller for taint, just put on node name: if its effect is
// NoExecute, each pod running there that does not tolerate it is
// evicted at once, and one whose tolerations of it all have a
// tolerationSeconds after the shortest of them, if the taint is still
// there then; its controller creates it again, pending (recreate). A
// toleration without tolerationSeconds keeps the pod there. A pod
// already terminating is on its way out and is left alone. O(pods).
func (s *sim) evictIntolerant(name string, taint v1.Taint) {
	if taint.Effect != v1.TaintEffectNoExecute {
		return
	}
	type eviction struct {
		p     *v1.Pod
		after time.Duration
	}
	var out []eviction
	for _, k := range s.cl.podGroupsOrder() {
		p := s.cl.pods[k]
		if p == nil || p.Spec.NodeName != name || p.DeletionTimestamp != nil {
			continue
		}
		if after, ok := evictAfter(p, &taint); ok {
			out = append(out, eviction{p, after})
		}
	}
	for _, e := range out {
		if e.after == 0 {
			s.taintEvict(e.p)
			continue
		}
		key, uid := framework.Key(e.p), e.p.UID
		s.at(s.now.Add(e.after), func() { s.taintEvictLater(key, uid, name, taint) })
	}
}

// evictAfter says whether pod p is evicted by NoExecute taint, and
// after how long: at once if no toleration of p tolerates it, after the
// shortest tolerationSeconds of those that do if they all have one (a
// negative one counts as 0), never if one has none.
func evictAfter(p *v1.Pod, taint *v1.Taint) (time.Duration, bool) {
	var shortest *int64
	for i := range p.Spec.Tolerations {
		t := &p.Spec.Tolerations[i]
		if !t.ToleratesTaint(klog.Background(), taint, false) {
			continue
		}
		if t.TolerationSeconds == nil {
			return 0, false
		}
		if shortest == nil || *t.TolerationSeconds < *shortest {
			shortest = t.TolerationSeconds
		}
	}
	if shortest == nil {
		return 0, true
	}
	return time.Duration(max(*shortest, 0)) * time.Second, true
}

// taintEvictLater evicts the pod key (if still the one with uid, on node
// name and not terminating) once its toleration of taint has run out,
// if the node still has the taint.
func (s *sim) taintEvictLater(key types.NamespacedName, uid types.UID, name string, taint v1.Taint) {
	p, n := s.cl.pods[key], s.cl.nodes[name]
	if p == nil || p.UID != uid || p.Spec.NodeName != name || p.DeletionTimestamp != nil || n == nil {
		return
	}
	for _, t := range n.Spec.Taints {
		if t.MatchTaint(&taint) {
			s.taintEvict(p)
			return
		}
	}
}

// taintEvict evicts p for a NoExecute taint; its controller creates it
// again.
func (s *sim) taintEvict(p *v1.Pod) {
	s.recreate(p)
	s.taintEvicted++
}
