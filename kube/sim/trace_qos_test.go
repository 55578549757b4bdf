package sim

import (
	"strings"
	"testing"
)

// qosPods: a pod holds the node's one GPU until 100 s; a BE pod arrives at
// 10 s and an LS pod at 20 s, and both wait for that GPU.
const qosPods = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n" +
	"fill,1000,1024,1,1000,,Guaranteed,Running,0,100,0\n" +
	"be,1000,1024,1,1000,,BE,Running,10,5000,10\n" +
	"ls,1000,1024,1,1000,,LS,Running,20,1000,20\n"

// By default every trace pod has priority 0 and namespace default, and the
// GPU freed at 100 s goes to the pod that came first; with qosPriority
// the LS pod takes it, and with namespaces: qos each pod is in its qos's
// namespace. The same on the device model and with DRA (where each
// namespace gets its own ResourceClaimTemplates: a pod cannot claim from
// another namespace's).
func TestAlibabaTraceQoSPriorityAndNamespaces(t *testing.T) {
	for _, model := range []string{GPUModelDevice, GPUModelDRA} {
		t.Run(model, func(t *testing.T) { testTraceQoS(t, model) })
	}
}

func testTraceQoS(t *testing.T, model string) {
	dir := writeTrace(t, "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,1,T4\n", qosPods)
	for _, c := range []struct {
		name       string
		prio       map[string]int32
		namespaces string
		first      string // bound at 100 s
		ns         map[string]string
		priority   map[string]int32
	}{
		{"default: one priority, one namespace", nil, "", "be",
			map[string]string{"fill": "default", "be": "default", "ls": "default"},
			map[string]int32{"fill": 0, "be": 0, "ls": 0}},
		{"namespaces default named", nil, TraceNamespacesDefault, "be",
			map[string]string{"fill": "default", "be": "default", "ls": "default"},
			map[string]int32{"fill": 0, "be": 0, "ls": 0}},
		{"priority by qos", map[string]int32{"LS": 1000, "BE": 0}, "", "ls",
			map[string]string{"fill": "default", "be": "default", "ls": "default"},
			map[string]int32{"fill": 0, "be": 0, "ls": 1000}},
		{"namespace by qos", nil, TraceNamespacesQoS, "be",
			map[string]string{"fill": "guaranteed", "be": "be", "ls": "ls"},
			map[string]int32{"fill": 0, "be": 0, "ls": 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := traceScenario(dir)
			sc.Trace.QoSPriority, sc.Trace.Namespaces, sc.Scheduler.GPUModel = c.prio, c.namespaces, model
			r := run(t, sc)
			for _, rec := range r.Records {
				if rec.Namespace != c.ns[rec.Name] || rec.Priority != c.priority[rec.Name] {
					t.Errorf("%s in %s at priority %d, want %s at %d", rec.Name, rec.Namespace, rec.Priority, c.ns[rec.Name], c.priority[rec.Name])
				}
				if rec.Name == c.first && !(rec.Bound && rec.BoundAt >= 100 && rec.BoundAt < 101) {
					t.Errorf("%s bound %v at %vs, want at 100s, when the GPU is freed (%s)", rec.Name, rec.Bound, rec.BoundAt, rec.LastFailure)
				}
			}
		})
	}
	for _, c := range []struct{ yaml, want string }{
		{"namespaces: tenant", `trace.namespaces: "tenant" is not default or qos`},
		{"qosPriority: {LS: 1000000001}", "trace.qosPriority.LS: at most 1000000000"},
		{`qosPriority: {"": 1}`, `trace.qosPriority: "" is not a qos value`},
	} {
		_, err := Parse([]byte("name: x\ntrace: {format: alibaba-gpu-v2023, dir: d, " + c.yaml + "}\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.yaml, err, c.want)
		}
	}
	bad := strings.Replace(qosPods, ",BE,", ",Best_Effort,", 1)
	sc := traceScenario(writeTrace(t, "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,1,T4\n", bad))
	sc.Trace.Namespaces = TraceNamespacesQoS
	if _, err := Run(sc, Options{}); err == nil || !strings.Contains(err.Error(), `openb_pod_list_default.csv:3: column qos: "Best_Effort" makes no valid namespace`) {
		t.Errorf("qos that is no namespace: %v", err)
	}
}
