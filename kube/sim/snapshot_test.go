package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func snapshotScenario(path string) *Scenario {
	return &Scenario{Name: "snap", Seed: 1, Snapshot: path}
}

// The snapshot's bound pods, of any scheduler, take room; its pending
// pods of the default scheduler are placed; the others are left out.
func TestSnapshot(t *testing.T) {
	r := run(t, snapshotScenario("testdata/snapshot/cluster.yaml"))
	want := SnapshotSummary{Path: "testdata/snapshot/cluster.yaml", Nodes: 2, Bound: 2, BoundOther: 2, Pending: 2, LeftAlone: 1, Terminal: 1}
	if r.Snapshot == nil || *r.Snapshot != want {
		t.Fatalf("snapshot %+v, want %+v", r.Snapshot, want)
	}
	// worker-a has 4 CPUs, 3 taken by the bound pods: one web pod fits, and
	// the other fits nowhere (worker-b is tainted).
	if r.Pods != 2 || r.Scheduled != 1 || r.Pending != 1 {
		t.Fatalf("%d pods, %d scheduled, %d pending; want 2, 1, 1", r.Pods, r.Scheduled, r.Pending)
	}
	if rec := r.Records[0]; rec.Name != "web-1" || rec.Node != "worker-a" {
		t.Fatalf("first record %+v, want web-1 on worker-a", rec)
	}
	if !strings.Contains(r.Records[1].LastFailure, "1 Insufficient cpu, 1 node(s) had untolerated taint") {
		t.Fatalf("web-2's failure %q", r.Records[1].LastFailure)
	}
	if a := r.Allocation; a.PeakCPU != 4.0/6 {
		t.Fatalf("cpu peak %v, want 4 of 6 CPUs", a.PeakCPU)
	}
}

func TestSnapshotDirectory(t *testing.T) {
	r := run(t, snapshotScenario("testdata/snapshot/dir"))
	if r.Snapshot.Nodes != 1 || r.Snapshot.Bound != 1 || r.Pods != 1 || r.Pending != 1 {
		t.Fatalf("snapshot %+v, %d pods, %d pending", r.Snapshot, r.Pods, r.Pending)
	}
}

// Bad snapshots are refused, naming the file and the problem.
func TestSnapshotMalformed(t *testing.T) {
	node := "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"
	for _, c := range []struct{ name, yaml, want string }{
		{"empty", "# nothing\n", "empty file"},
		{"unknown field", "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nspec: {unschedulabel: true}\n", `unknown field "spec.unschedulabel"`},
		{"unknown field in a list", "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(node, "\n", "\n  ") + "bogus: 1\n", `items[0]: `},
		{"other kind", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n", "kind Deployment is not in a snapshot"},
		// A kind the snapshot takes, in a version it does not (a cluster
		// that serves DRA's beta): the version, not the kind, is wrong.
		{"a snapshot's kind in another version", "apiVersion: resource.k8s.io/v1beta1\nkind: ResourceSlice\nmetadata: {name: s}\nspec: {nodeName: n1, driver: d, pool: {name: p, generation: 1, resourceSliceCount: 1}}\n",
			"document 1: ResourceSlice s: apiVersion resource.k8s.io/v1beta1: a snapshot takes ResourceSlice as resource.k8s.io/v1"},
		{"infinity", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: u}\n  spec:\n    priority: .inf\n    containers: [{name: c, image: x}]\n",
			"document 1: List: line 8: items[0].spec.priority: .inf is not a finite number"},
		{"a snapshot's kind in a version the scheme does not know", "apiVersion: resource.k8s.io/v1alpha1\nkind: DeviceClass\nmetadata: {name: gpu}\n",
			"document 1: DeviceClass gpu: apiVersion resource.k8s.io/v1alpha1: a snapshot takes DeviceClass as resource.k8s.io/v1"},
		{"a snapshot's kind in another version, in a typed list", "apiVersion: resource.k8s.io/v1beta2\nkind: ResourceClaimList\nitems:\n- {metadata: {name: c, namespace: ml}}\n",
			"items[0]: ResourceClaim ml/c: apiVersion resource.k8s.io/v1beta2: a snapshot takes ResourceClaim as resource.k8s.io/v1"},
		// Budgets the disruption controller could not read.
		{"quantity not a quantity", "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: c, image: x}, {name: d, image: x, resources: {requests: {cpu: lots}}}]}}\n",
			`document 1: items[0]: Pod p: spec.containers[1].resources.requests.cpu: "lots" is not a quantity`},
		{"node capacity not a quantity", "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {capacity: {memory: 4 gigs}}\n",
			`document 1: Node n1: status.capacity.memory: "4 gigs" is not a quantity`},
		{"budget twice", "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: db, namespace: shop}\nspec: {minAvailable: 1, selector: {matchLabels: {app: db}}}\n---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: db, namespace: shop}\nspec: {minAvailable: 1, selector: {matchLabels: {app: db}}}\n", ": PodDisruptionBudget shop/db appears twice"},
		{"budget with both bounds", "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: db}\nspec: {minAvailable: 1, maxUnavailable: 1}\n",
			"PodDisruptionBudget default/db: spec: minAvailable and maxUnavailable are both set"},
		{"budget percentage", "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: db}\nspec: {minAvailable: half}\n",
			`PodDisruptionBudget default/db: spec.minAvailable: "half" is not a number of pods or a percentage`},
		{"budget selector", "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: db}\nspec: {minAvailable: 1, selector: {matchExpressions: [{key: a, operator: Bogus}]}}\n",
			`PodDisruptionBudget default/db: spec.selector: "Bogus" is not a valid`},
		{"unknown kind in a typed list", "apiVersion: apps/v1\nkind: DeploymentList\nitems:\n- {metadata: {name: d, namespace: shop}}\n",
			"items[0]: Deployment shop/d: kind Deployment is not in a snapshot"},
		{"not yaml", "apiVersion: v1\nkind: [\n", "document 1"},
		{"duplicate node", node + "---\n" + node, "node n1 appears twice"},
		{"pending pod of a PodGroup", node + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {schedulingGroup: {podGroupName: train}, containers: [{name: c, image: x}]}\n",
			"pod default/p is pending in PodGroup default/train (spec.schedulingGroup), which a snapshot cannot hold"},
		{"negative request", node + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {nodeName: n1, containers: [{name: c, image: x, resources: {requests: {cpu: \"-8\"}}}]}\n",
			"pod default/p: containers c requests cpu must not be negative, got -8"},
		{"duplicate namespace", "apiVersion: v1\nkind: Namespace\nmetadata: {name: a, labels: {x: \"1\"}}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: a, labels: {x: \"2\"}}\n",
			"namespace a appears twice"},
		{"pod on a missing node", node + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {nodeName: n9, containers: [{name: c, image: x}]}\n", "pod default/p is bound to node n9, which is not in the snapshot"},
		{"unknown field names the object", "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: web-1, namespace: shop}, spec: {bogus: 1}}\n",
			`document 1: items[0]: Pod shop/web-1: strict decoding error: unknown field "spec.bogus"`},
		{"unregistered kind", "apiVersion: v1\nkind: Nonsense\nmetadata: {name: x}\n", "document 1: Nonsense x: this kind is not in a snapshot (Node, Pod"},
		{"no kind", "apiVersion: v1\nmetadata: {name: lonely}\nspec: {containers: [{name: c, image: " + strings.Repeat("x", 500) + "}]}\n", "document 1: object lonely: no kind field"},
		{"no apiVersion", "kind: Pod\nmetadata: {name: p}\n", "document 1: Pod p: no apiVersion field"},
		{"node without a name", "apiVersion: v1\nkind: Node\nmetadata: {labels: {a: b}}\n", "document 1: Node: no metadata.name"},
		{"pod without a name", node + "---\napiVersion: v1\nkind: Pod\nmetadata: {namespace: ml}\nspec: {containers: [{name: c, image: x}]}\n", "document 2: Pod ml/: no metadata.name"},
		{"claim without a name", node + "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {namespace: ml}\nspec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]}}\n",
			"document 2: ResourceClaim ml/: no metadata.name"},
		{"slice without a name in a typed list", "apiVersion: resource.k8s.io/v1\nkind: ResourceSliceList\nitems:\n- {spec: {driver: d, nodeName: n1, pool: {name: p, resourceSliceCount: 1}}}\n",
			"document 1: ResourceSliceList: items[0]: ResourceSlice: no metadata.name"},
		{"device class twice", "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu.example.com}\n---\napiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu.example.com}\n",
			": DeviceClass gpu.example.com appears twice"},
		{"claim twice", "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c, namespace: ml}\n---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c, namespace: ml}\n",
			": ResourceClaim ml/c appears twice"},
		{"claim entry without a source", node + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x}], resourceClaims: [{name: gpu}]}\n",
			"pod default/p: spec.resourceClaims gpu: needs exactly one of resourceClaimName and resourceClaimTemplateName"},
		{"negative allocatable", "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: \"-4\", memory: 1Gi}}\n", "node n1: allocatable cpu must not be negative, got -4"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "snap.yaml")
			os.WriteFile(path, []byte(c.yaml), 0o644)
			_, err := Run(snapshotScenario(path), Options{})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %v, want %q and the file's name", err, c.want)
			}
			// Neither the scheme's Go source nor the whole document.
			if msg := err.Error(); strings.Contains(msg, ".go:") || strings.Contains(msg, strings.Repeat("x", 300)) || len(msg) > 500 {
				t.Fatalf("error leaks source or data: %v", err)
			}
		})
	}
	t.Run("over-large", func(t *testing.T) {
		defer func(n int64) { maxSnapshotFileBytes = n }(maxSnapshotFileBytes)
		maxSnapshotFileBytes = 100
		_, err := Run(snapshotScenario("testdata/snapshot/cluster.yaml"), Options{})
		if err == nil || !strings.Contains(err.Error(), "cluster.yaml: ") || !strings.Contains(err.Error(), "more than the limit of 100") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("empty directory", func(t *testing.T) {
		dir := t.TempDir()
		_, err := Run(snapshotScenario(dir), Options{})
		if err == nil || !strings.Contains(err.Error(), "no .yaml, .yml or .json files") {
			t.Fatalf("error %v", err)
		}
	})
}

// The lists kubectl and the API return (kubectl get nodes -o yaml is a
// List; the API's own list endpoints give NodeList and PodList) load as
// their items.
func TestSnapshotTypedLists(t *testing.T) {
	nodes := "apiVersion: v1\nkind: NodeList\nitems:\n- {metadata: {name: n1}, status: {allocatable: {cpu: \"4\", memory: 8Gi, pods: \"110\"}}}\n"
	pods := "apiVersion: v1\nkind: PodList\nitems:\n- {metadata: {name: p1}, spec: {containers: [{name: c, image: x, resources: {requests: {cpu: \"1\"}}}]}}\n" +
		"- {metadata: {name: p2, namespace: team}, spec: {containers: [{name: c, image: x}]}}\n"
	path := filepath.Join(t.TempDir(), "snap.yaml")
	os.WriteFile(path, []byte(nodes+"---\n"+pods), 0o644)
	r := run(t, snapshotScenario(path))
	if r.Snapshot.Nodes != 1 || r.Snapshot.Pending != 2 || r.Scheduled != 2 {
		t.Fatalf("snapshot %+v, %d scheduled; want 1 node and 2 pods placed", r.Snapshot, r.Scheduled)
	}
}

// A snapshot's pods are found by the scenario's events: removing the
// node a snapshot pod was placed on recreates it.
func TestSnapshotPodsMeetScenarioEvents(t *testing.T) {
	sc := parse(t, `
name: snap-events
snapshot: testdata/snapshot/dir
nodes: [{name: big, count: 1, capacity: {cpu: "64", memory: 64Gi}}]
pods: []
events: [{at: 10s, removeNodes: {group: big}}]
`)
	r := run(t, sc)
	if r.Evicted != 1 || r.DeletedBound != 1 || r.Pending != 1 {
		t.Fatalf("evicted %d, deleted after binding %d, pending %d: want the waiting pod bound on big, recreated when big goes, and pending (n1 is full)",
			r.Evicted, r.DeletedBound, r.Pending)
	}
}

// TestSnapshotVolumesAndDevices: a snapshot's volumes, claims, classes
// and DRA objects reach kube-scheduler's plugins. Of two nodes' four GPUs
// a running pod holds one (its claim, allocated and reserved in the
// snapshot, still names it after the simulator renames the pods' UIDs),
// so three of four pending pods that claim one each are bound and the
// fourth waits with DynamicResources' reason; the pod that mounts a local
// volume is bound to its node.
func TestSnapshotVolumesAndDevices(t *testing.T) {
	sc := snapshotScenario("testdata/snapshot/dra.yaml")
	sc.Scheduler.Plugins = PluginsUpstream
	s := runSim(t, sc)
	want := SnapshotSummary{Path: "testdata/snapshot/dra.yaml", Nodes: 2, Bound: 1, BoundOther: 1, Pending: 5, Objects: 8}
	if *s.x.snapshot != want {
		t.Fatalf("snapshot %+v, want %+v", *s.x.snapshot, want)
	}
	infer, waiting := 0, ""
	for _, st := range s.order {
		p := s.cl.pods[st.key]
		switch {
		case st.key.Name == "db-0" && p.Spec.NodeName != "gpu-b":
			t.Errorf("db-0 on %q (%s), its volume is on gpu-b", p.Spec.NodeName, st.lastMessage)
		case strings.HasPrefix(st.key.Name, "infer-") && p.Spec.NodeName != "":
			infer++
		case strings.HasPrefix(st.key.Name, "infer-"):
			waiting = st.lastMessage
		}
	}
	if infer != 3 || !strings.Contains(waiting, "cannot allocate all claims") {
		t.Errorf("%d of 4 inference pods bound, want 3; the last waits with %q", infer, waiting)
	}
	checkClaimsMatchPods(t, s)
}
