package sim

import (
	"strings"
	"testing"
)

// TestDRAScenarioPodsClaimTheirGPUs: in a trace replayed with GPUs as DRA
// devices, a scenario's pod that asks for alibaba.com/gpu-milli claims
// its GPU as the trace's pods do. Of three shares of 600 on a node of two
// GPUs, two fit, one a GPU, and the third waits, as on the device model;
// counted as the extended resource alone (1,800 of 2,000 thousandths)
// all three would bind, on no device.
func TestDRAScenarioPodsClaimTheirGPUs(t *testing.T) {
	dir := writeTrace(t, "sn,cpu_milli,memory_mib,gpu,model\nn,16000,65536,2,V100\n", timedHeader+
		"w,1000,1024,1,1000,,LS,Running,10,500,10\n")
	for _, model := range []string{GPUModelDevice, GPUModelDRA} {
		t.Run(model, func(t *testing.T) {
			sc := parseScenario(t, `name: mixed
seed: 1
scheduler: {gpuModel: `+model+`, gpuPolicy: bestfit}
trace: {format: alibaba-gpu-v2023, dir: `+dir+`}
pods:
  - {name: s, count: 3, requests: {cpu: "1", memory: 1Gi, alibaba.com/gpu-milli: "600"}}
`)
			s := runSim(t, sc)
			b, msg := boundAt(s), lastMessages(s)
			if b["s-0"] < 0 || b["s-1"] < 0 || b["s-2"] >= 0 || b["w"] >= 0 {
				t.Errorf("bound at %v (%v); want s-0 and s-1 bound, s-2 and w waiting", b, msg)
			}
			if model == GPUModelDRA {
				if !strings.Contains(msg["s-2"], "cannot allocate all claims") {
					t.Errorf("s-2: %q, want pending on DynamicResources", msg["s-2"])
				}
				checkClaimsMatchPods(t, s)
			}
		})
	}
	sc := parseScenario(t, `name: odd
trace: {format: alibaba-gpu-v2023, dir: `+dir+`}
pods:
  - {name: s, count: 1, requests: {cpu: "1", alibaba.com/gpu-milli: "1500"}}
`)
	if _, err := Run(sc, Options{}); err == nil || !strings.Contains(err.Error(), "pods[0].requests: alibaba.com/gpu-milli: GPU request of 1500 thousandths is neither a share of one GPU nor whole GPUs") {
		t.Errorf("a request of 1500: %v", err)
	}
}
