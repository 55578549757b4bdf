package sim

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// binding is one pod's placement: when, and in which zone.
type binding struct {
	at   time.Time
	pod  string
	zone string
}

// bindings lists the run's bound pods of a group in the order they were
// bound.
func (s *sim) bindings(group string) []binding {
	var out []binding
	for _, st := range s.order {
		p := s.cl.pods[st.key]
		if st.bound.IsZero() || p == nil || p.Labels["group"] != group {
			continue
		}
		out = append(out, binding{at: st.bound, pod: p.Name, zone: s.cl.nodes[p.Spec.NodeName].Labels[zoneLabel]})
	}
	slices.SortStableFunc(out, func(a, b binding) int { return a.at.Compare(b.at) })
	return out
}

// maxSkewError replays bindings in order over zones (all present from the
// start) and reports the first that leaves one zone more than maxSkew
// replicas ahead of another.
func maxSkewError(zones []string, bs []binding, maxSkew int) error {
	count := map[string]int{}
	for _, z := range zones {
		count[z] = 0
	}
	for i, b := range bs {
		count[b.zone]++
		lo, hi := int(^uint(0)>>1), 0
		for _, n := range count {
			lo, hi = min(lo, n), max(hi, n)
		}
		if hi-lo > maxSkew {
			return fmt.Errorf("binding %d (%s in %s at %v) makes the skew %d: %v", i, b.pod, b.zone, b.at.Sub(epoch), hi-lo, count)
		}
	}
	return nil
}

// TestMaxSkewErrorCatches: the checker finds a zone two ahead.
func TestMaxSkewErrorCatches(t *testing.T) {
	bs := []binding{{pod: "p0", zone: "a"}, {pod: "p1", zone: "b"}, {pod: "p2", zone: "a"}, {pod: "p3", zone: "a"}}
	if err := maxSkewError([]string{"a", "b"}, bs[:3], 1); err != nil {
		t.Errorf("a 2, b 1: %v", err)
	}
	if err := maxSkewError([]string{"a", "b"}, bs, 1); err == nil {
		t.Error("a 3, b 1 passed")
	}
}

// TestZoneSpreadHoldsWhileNodesArrive: in ZoneSpread every replica is
// bound, and no binding ever puts one zone more than one replica ahead of
// another (maxSkew 1, DoNotSchedule), while nodes join zone by zone.
func TestZoneSpreadHoldsWhileNodesArrive(t *testing.T) {
	s := runSim(t, load(t, "ZoneSpread"))
	bs := s.bindings("web")
	if len(bs) != 60 {
		t.Errorf("%d of 60 replicas bound: %v", len(bs), bs)
	}
	if err := maxSkewError([]string{"zone-a", "zone-b", "zone-c"}, bs, 1); err != nil {
		t.Error(err)
	}
}

// TestVolumeWaitBindsAfterVolumes: in VolumeWait no database pod is bound
// before its claim and volume exist; each is bound on its local volume's
// node, within a second of their creation (woken by the claim's event,
// not by a flush), after one failed attempt.
func TestVolumeWaitBindsAfterVolumes(t *testing.T) {
	sc := load(t, "VolumeWait")
	created := map[string]time.Time{} // claim name: when it was created
	pvNode := map[string]string{}     // claim name: its volume's node
	for _, e := range sc.Events {
		for _, o := range e.CreateObjects {
			switch x := o.obj.(type) {
			case *v1.PersistentVolumeClaim:
				created[x.Name] = epoch.Add(e.At)
			case *v1.PersistentVolume:
				pvNode[x.Spec.ClaimRef.Name] = x.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values[0]
			}
		}
	}
	s := runSim(t, sc)
	n := 0
	for _, st := range s.order {
		p := s.cl.pods[st.key]
		if p == nil || p.Labels["group"] != "db" {
			continue
		}
		n++
		claim := p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName
		at, ok := created[claim]
		switch {
		case !ok:
			t.Fatalf("%s: claim %s is never created", p.Name, claim)
		case st.bound.IsZero():
			t.Errorf("%s: never bound (%s)", p.Name, st.lastMessage)
		case st.bound.Before(at):
			t.Errorf("%s: bound at %v, before its claim %s exists (%v)", p.Name, st.bound.Sub(epoch), claim, at.Sub(epoch))
		case st.bound.Sub(at) > time.Second:
			t.Errorf("%s: bound %v after its claim was created, want within 1s", p.Name, st.bound.Sub(at))
		case p.Spec.NodeName != pvNode[claim]:
			t.Errorf("%s: bound to %s, its volume is on %s", p.Name, p.Spec.NodeName, pvNode[claim])
		case st.attempts != 2:
			t.Errorf("%s: %d attempts, want 2 (one before its volume, one after)", p.Name, st.attempts)
		}
	}
	if n != 6 {
		t.Errorf("%d database pods, want 6", n)
	}
	if b := s.bound(); b != 46 {
		t.Errorf("%d of 46 pods bound", b)
	}
}

// TestGangsOnUpstreamPluginsAllOrNothing: on kube-scheduler's plugins a
// group's members are placed in one snapshot, each seeing those placed
// before. A gang of 4 asking for host port 8080 fits 3 nodes only
// (NodePorts rejects the 4th), so none of it is bound; a gang of 3 with
// another port is bound on the 3 nodes; and 3 lone pods asking for 8080
// are bound too: the failed gang left nothing behind.
func TestGangsOnUpstreamPluginsAllOrNothing(t *testing.T) {
	sc, err := Parse([]byte(`
name: GangPorts
scheduler: {plugins: upstream}
nodes:
  - {name: n, count: 3, capacity: {cpu: "8", memory: 32Gi}}
pods:
  - {name: four, count: 4, requests: {cpu: "1"}, hostPorts: [8080], gang: {size: 4}}
  - {name: three, count: 3, requests: {cpu: "1"}, hostPorts: [9090], gang: {size: 3}}
  - {name: lone, count: 3, requests: {cpu: "1"}, hostPorts: [8080], arrival: {at: 1s}}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := runSim(t, sc)
	r := s.report()
	if g := r.Gangs; g == nil || g.Gangs != 2 || g.Placed != 1 || g.Waiting != 1 || g.PartlyPlaced != 0 || r.Scheduled != 6 {
		t.Fatalf("scheduled %d, gangs %+v", r.Scheduled, r.Gangs)
	}
	nodes := map[string]map[string]bool{}
	for _, st := range s.order {
		p := s.cl.pods[st.key]
		if st.bound.IsZero() || p == nil {
			continue
		}
		group := p.Labels["group"]
		if nodes[group] == nil {
			nodes[group] = map[string]bool{}
		}
		nodes[group][p.Spec.NodeName] = true
	}
	if len(nodes["four"]) != 0 || len(nodes["three"]) != 3 || len(nodes["lone"]) != 3 {
		t.Fatalf("nodes per group %v", nodes)
	}
	if len(r.PendingReasons) != 1 || !strings.Contains(r.PendingReasons[0].Label, "3 of 4 members fit") ||
		!strings.Contains(r.PendingReasons[0].Label, "didn't have free ports") {
		t.Fatalf("pending reasons %+v", r.PendingReasons)
	}
}

// TestGangSchedulingScenarioOnUpstreamPlugins: the built-in gang
// scenario on kube-scheduler's plugins places every gang whole, never
// one partly.
func TestGangSchedulingScenarioOnUpstreamPlugins(t *testing.T) {
	sc := load(t, "GangScheduling")
	if err := sc.Set("plugins", "upstream"); err != nil {
		t.Fatal(err)
	}
	r, err := Run(sc, Options{CheckInvariants: true})
	if err != nil {
		t.Fatal(err)
	}
	if g := r.Gangs; g == nil || g.Gangs != 13 || g.Placed != 13 || g.PartlyPlaced != 0 || g.Waiting != 0 {
		t.Fatalf("gangs %+v", r.Gangs)
	}
}
