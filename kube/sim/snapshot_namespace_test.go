package sim

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// TestSnapshotNamespacesReachTheAffinityPlugin: a snapshot's Namespace
// objects give InterPodAffinity's namespaceSelector its namespaces, as a
// cluster's namespace informer gives them to kube-scheduler's plugin. web
// (namespace shop) needs a db pod, in a namespace labelled team=data, on
// its node: only node-b's db pod, in namespace data, is one. The
// simulator used to give the labels to its own cache only, so the plugin
// listed no namespace for the selector and web fit nowhere.
func TestSnapshotNamespacesReachTheAffinityPlugin(t *testing.T) {
	path := writeNamespaceSnapshot(t)
	s := runSim(t, snapshotScenario(path))
	st := s.stats[s.cl.pods[types.NamespacedName{Namespace: "shop", Name: "web"}].UID]
	if st.bound.IsZero() || st.ext.node != "node-b" {
		t.Fatalf("web bound on %q (bound: %v), want node-b beside the db pod: %s", st.ext.node, !st.bound.IsZero(), st.lastMessage)
	}
}

// namespaceSnapshot: see TestSnapshotNamespacesReachTheAffinityPlugin.
const namespaceSnapshot = `apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Namespace, metadata: {name: data, labels: {team: data}}}
- {apiVersion: v1, kind: Namespace, metadata: {name: shop}}
- {apiVersion: v1, kind: Node, metadata: {name: node-a, labels: {kubernetes.io/hostname: node-a}}, status: {allocatable: {cpu: "4", pods: "110"}, capacity: {cpu: "4", pods: "110"}}}
- {apiVersion: v1, kind: Node, metadata: {name: node-b, labels: {kubernetes.io/hostname: node-b}}, status: {allocatable: {cpu: "4", pods: "110"}, capacity: {cpu: "4", pods: "110"}}}
- apiVersion: v1
  kind: Pod
  metadata: {name: db, namespace: data, labels: {app: db}}
  spec: {nodeName: node-b, containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]}
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata: {name: web, namespace: shop}
  spec:
    containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
    affinity:
      podAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
        - labelSelector: {matchLabels: {app: db}}
          namespaceSelector: {matchLabels: {team: data}}
          topologyKey: kubernetes.io/hostname
  status: {phase: Pending}
`

func writeNamespaceSnapshot(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cluster.yaml")
	if err := os.WriteFile(path, []byte(namespaceSnapshot), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestForecastNamespacesReachTheAffinityPlugin: a forecast of the live
// state (the scheduler's /debug/forecast and what-ifs) gives the
// plugins the state's namespaces too, with a base built once and
// without: web starts at once on node-b, as the live scheduler places it.
func TestForecastNamespacesReachTheAffinityPlugin(t *testing.T) {
	objs, err := readSnapshot(writeNamespaceSnapshot(t))
	if err != nil {
		t.Fatal(err)
	}
	now := epoch.Add(time.Hour)
	st := &ForecastState{Now: now, Nodes: objs.nodes, Namespaces: objs.namespaces}
	for _, p := range objs.pods {
		p.Spec.SchedulerName, p.UID = schedulerName, types.UID(p.Name)
		if p.Spec.NodeName != "" {
			st.Running = append(st.Running, RunningPod{Pod: p, Started: now.Add(-time.Minute)})
			continue
		}
		st.Pending = append(st.Pending, p)
	}
	base, err := NewForecastBase(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		base *ForecastBase
	}{{name: "fresh"}, {name: "from a base", base: base}, {name: "from the base again", base: base}} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := RunForecast(&Scenario{Name: "t", Seed: 1}, st, ForecastOptions{Horizon: time.Hour, Base: tc.base})
			if err != nil {
				t.Fatal(err)
			}
			pf, err := f.Of(types.NamespacedName{Namespace: "shop", Name: "web"})
			if err != nil || !pf.Starts || pf.Wait > time.Second || pf.Node != "node-b" {
				t.Errorf("web: %+v (%v), want a start at once on node-b", pf, err)
			}
		})
	}
}
