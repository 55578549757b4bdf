package sim

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// upstreamScenario loads a built-in scenario and runs it on
// kube-scheduler's framework.
func upstreamScenario(t testing.TB, name string) *Scenario {
	t.Helper()
	sc := load(t, name)
	if err := sc.Set("plugins", PluginsUpstream); err != nil {
		t.Fatal(err)
	}
	return sc
}

// smallArrival is NodeArrival made small: pods wait for nodes that join.
const smallArrival = `
name: small
seed: 1
nodes:
  - {name: node, count: 4, capacity: {cpu: "8", memory: 32Gi}, zones: 2}
pods:
  - {name: first, count: 30, requests: {cpu: "1", memory: 2Gi}}
  - {name: waiting, count: 60, requests: {cpu: "1", memory: 2Gi}, arrival: {at: 2s, rate: 20}}
events:
  - {at: 30s, addNodes: {name: wave1, count: 4, capacity: {cpu: "8", memory: 32Gi}, zones: 2}}
  - {at: 60s, addNodes: {name: wave2, count: 4, capacity: {cpu: "8", memory: 32Gi}, zones: 2}}
`

// TestUpstreamDeterministic: with kube-scheduler's framework, the same
// scenario and seed give the same report, byte for byte, and a different
// seed a different one (the pick among the best nodes is the seed's).
func TestUpstreamDeterministic(t *testing.T) {
	report := func(seed uint64) string {
		sc, err := Parse([]byte(smallArrival))
		if err != nil {
			t.Fatal(err)
		}
		if err := sc.Set("plugins", PluginsUpstream); err != nil {
			t.Fatal(err)
		}
		sc.Seed = seed
		r := run(t, sc)
		r.Wall = nil
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	a, b := report(1), report(1)
	if a != b {
		t.Fatalf("two runs of one seed differ:\n%s\n%s", a, b)
	}
	if c := report(2); c == a {
		t.Errorf("seeds 1 and 2 give the same report")
	}
}

// TestUpstreamSettingsRefused: the settings of schedq's former plugins,
// or an unknown plugin set, are refused with the field and what
// replaces it named.
func TestUpstreamSettingsRefused(t *testing.T) {
	for _, tc := range []struct{ key, value, want string }{
		{"plugins", "kube", `scheduler.plugins: "kube" is not upstream`},
		{"plugins", "schedq", "scheduler.plugins: schedq's own plugins were removed"},
		{"scoring", "balanced", "scheduler.scoring: was removed with schedq's own plugins: set NodeResourcesFit's scoringStrategy"},
	} {
		sc := upstreamScenario(t, "NodeArrival")
		err := sc.Set(tc.key, tc.value)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%s: %v, want %q", tc.key, tc.value, err, tc.want)
		}
	}
	for _, tc := range []struct{ yaml, want string }{
		{"scheduler: {plugins: schedq}\n", "scheduler.plugins: schedq's own plugins were removed"},
		{"scheduler: {disablePlugins: [NodeAffinity]}\n", "scheduler.disablePlugins: was removed with schedq's own plugins: disable plugins in the KubeSchedulerConfiguration profile of scheduler.config"},
		{"scheduler: {scoring: balanced}\n", "scheduler.scoring: was removed"},
	} {
		_, err := Parse([]byte("name: x\npods: [{name: p}]\n" + tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

// fieldsScenario has a pod group for each field only kube-scheduler's
// plugins read: host ports, preferred node affinity, and (node b) a
// PreferNoSchedule taint.
const fieldsScenario = `
name: fields
seed: 1
scheduler: {plugins: upstream}
nodes:
  - {name: a, count: 1, capacity: {cpu: "32", memory: 64Gi}, labels: {disk: ssd}}
  - {name: b, count: 1, capacity: {cpu: "32", memory: 64Gi}, taints: [{key: spot, effect: PreferNoSchedule}]}
pods:
  - {name: ports, count: 3, requests: {cpu: 100m}, hostPorts: [8080]}
  - name: prefer
    count: 4
    requests: {cpu: 100m}
    arrival: {at: 1s}
    tolerations: [{key: spot, operator: Exists}]
    nodeAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 100
          preference: {matchExpressions: [{key: disk, operator: In, values: [ssd]}]}
  - {name: plain, count: 4, requests: {cpu: 100m}, arrival: {at: 2s}}
`

// TestUpstreamFieldsReachPlugins: host ports keep two pods of one port
// off a node (the third waits), preferred node affinity and a
// PreferNoSchedule taint both send pods to node a.
func TestUpstreamFieldsReachPlugins(t *testing.T) {
	sc, err := Parse([]byte(fieldsScenario))
	if err != nil {
		t.Fatal(err)
	}
	s := runSim(t, sc)
	nodes := map[string][]string{}
	for _, st := range s.order {
		p := s.cl.pods[st.key]
		nodes[p.Labels["group"]] = append(nodes[p.Labels["group"]], p.Spec.NodeName)
		if p.Labels["group"] == "ports" && p.Spec.NodeName == "" && !strings.Contains(st.lastMessage, "didn't have free ports") {
			t.Errorf("%s waits for %q, want free ports", p.Name, st.lastMessage)
		}
	}
	ports := slices.Sorted(slices.Values(nodes["ports"]))
	if strings.Join(ports, ",") != ",a-0,b-0" {
		t.Errorf("hostPort pods on %q, want one on each node and one pending", ports)
	}
	for _, g := range []string{"prefer", "plain"} {
		for _, n := range nodes[g] {
			if n != "a-0" {
				t.Errorf("%s pods on %v, want all on a-0", g, nodes[g])
				break
			}
		}
	}
}

// TestUpstreamFieldsRefused: bad Kubernetes values name their field.
func TestUpstreamFieldsRefused(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"pods:\n  - {name: p, topologySpreadConstraints: [{maxSkw: 1}]}\n", `pods[0].topologySpreadConstraints: unknown field "maxSkw"`},
		{"pods:\n  - {name: p, topologySpreadConstraints: [{maxSkew: 0, topologyKey: z, whenUnsatisfiable: DoNotSchedule}]}\n", "pods[0].topologySpreadConstraints[0].maxSkew: must be at least 1"},
		{"pods:\n  - {name: p, topologySpreadConstraints: [{maxSkew: 1, topologyKey: z, whenUnsatisfiable: Never}]}\n", `pods[0].topologySpreadConstraints[0].whenUnsatisfiable: "Never" is not DoNotSchedule or ScheduleAnyway`},
		{"pods:\n  - {name: p, hostPorts: [70000]}\n", "pods[0].hostPorts[0]: must be 1 to 65535"},
		{"pods:\n  - {name: p, nodeAffinity: {preferred: []}}\n", `pods[0].nodeAffinity: unknown field "preferred"`},
		{"pods: [{name: p}]\nobjects:\n  - {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}\n", "objects[0]: kind ConfigMap: the simulator takes PersistentVolume"},
		{"pods: [{name: p}]\nobjects:\n  - {apiVersion: resource.k8s.io/v1beta1, kind: DeviceClass, metadata: {name: x}}\n", "objects[0]: apiVersion resource.k8s.io/v1beta1: the simulator takes DeviceClass as resource.k8s.io/v1"},
		{"pods: [{name: p}]\nobjects:\n  - {apiVersion: v1, kind: PersistentVolume, metadata: {name: x}, spec: {capacty: {}}}\n", `objects[0]: strict decoding error: unknown field "spec.capacty"`},
		{"pods: [{name: p}]\nobjects:\n  - {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: x}}\n", "objects[0].spec.volumeName: must name the claim's volume"},
		{"pods: [{name: p}]\nevents:\n  - {at: 1s, createObjects: [{apiVersion: v1, kind: PersistentVolume}]}\n", "events[0].createObjects[0].metadata.name: must not be empty"},
	} {
		_, err := Parse([]byte("name: bad\nscheduler: {plugins: upstream}\n" + tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

// deleteScenario creates a claim and its volume, deletes the claim at 1s,
// and has a pod that mounts it arrive at 2s.
const deleteScenario = `
name: delete
seed: 1
scheduler: {plugins: upstream}
nodes: [{name: n, count: 1, capacity: {cpu: "8", memory: 8Gi}}]
objects:
  - {apiVersion: v1, kind: PersistentVolume, metadata: {name: pv}, spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], hostPath: {path: /x}, claimRef: {namespace: default, name: data}}}
  - {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data}, spec: {volumeName: pv, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}
pods: [{name: p, count: 1, claims: [data], arrival: {at: 2s}}]
events:
  - {at: 1s, deleteObjects: [{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data}}]}
`

// TestUpstreamDeleteObjects: a deleted claim is gone for the plugins (the
// pod that mounts it waits, "not found"); deleting it twice fails the run.
func TestUpstreamDeleteObjects(t *testing.T) {
	sc, err := Parse([]byte(deleteScenario))
	if err != nil {
		t.Fatal(err)
	}
	s := runSim(t, sc)
	st := s.order[0]
	if !st.bound.IsZero() || !strings.Contains(st.lastMessage, `persistentvolumeclaim "data" not found`) {
		t.Errorf("pod bound at %v, last message %q; want pending, claim not found", st.bound, st.lastMessage)
	}
	sc.Events = append(sc.Events, sc.Events[0])
	if _, err := Run(sc, Options{}); err == nil || !strings.Contains(err.Error(), "deleteObjects: PersistentVolumeClaim default/data does not exist") {
		t.Errorf("second delete: %v", err)
	}
}

// runSim runs a scenario with the queue's invariants checked after every
// step and returns the finished run, for tests that look at the
// placements.
func runSim(t *testing.T, sc *Scenario) *sim {
	t.Helper()
	s, err := newSim(sc, Options{CheckInvariants: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if err := s.loop(); err != nil {
		t.Fatal(err)
	}
	return s
}
