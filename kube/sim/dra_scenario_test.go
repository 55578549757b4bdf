package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// draObjects is a DeviceClass, a template of one device, and a slice of
// gpus devices for each node named.
func draObjects(gpus int, nodes ...string) string {
	out := `
  - apiVersion: resource.k8s.io/v1
    kind: DeviceClass
    metadata: {name: gpu.example.com}
  - apiVersion: resource.k8s.io/v1
    kind: ResourceClaimTemplate
    metadata: {name: one-gpu}
    spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]}}}`
	for _, n := range nodes {
		out += draSlice(n, gpus)
	}
	return out
}

func draSlice(node string, gpus int) string {
	devs := make([]string, gpus)
	for i := range devs {
		devs[i] = fmt.Sprintf("{name: gpu-%d}", i)
	}
	return fmt.Sprintf(`
  - apiVersion: resource.k8s.io/v1
    kind: ResourceSlice
    metadata: {name: %s-gpus}
    spec: {nodeName: %s, driver: gpu.example.com, pool: {name: %s, generation: 1, resourceSliceCount: 1}, devices: [%s]}`,
		node, node, node, strings.Join(devs, ", "))
}

func parseScenario(t *testing.T, yaml string) *Scenario {
	t.Helper()
	sc, err := Parse([]byte(yaml))
	if err != nil {
		t.Fatalf("%v\n%s", err, yaml)
	}
	return sc
}

// boundAt is when each pod was bound (zero if never), by name.
func boundAt(s *sim) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, st := range s.order {
		out[st.key.Name] = -1
		if !st.bound.IsZero() {
			out[st.key.Name] = st.bound.Sub(epoch)
		}
	}
	return out
}

func lastMessages(s *sim) map[string]string {
	out := map[string]string{}
	for _, st := range s.order {
		out[st.key.Name] = st.lastMessage
	}
	return out
}
