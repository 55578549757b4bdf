package sim

import (
	"testing"
	"time"
)

// gpuSliceYAML is the trace's ResourceSlice of node n (gpuSlice) with
// gpus V100 devices, as a scenario object.
func gpuSliceYAML(gpus int) string {
	y := "{apiVersion: resource.k8s.io/v1, kind: ResourceSlice, metadata: {name: n-gpus}, spec: {driver: gpu.alibaba.com, nodeName: n, pool: {name: n, generation: 1, resourceSliceCount: 1}, devices: ["
	for i := range gpus {
		if i > 0 {
			y += ", "
		}
		y += `{name: gpu-` + string(rune('0'+i)) + `, attributes: {model: {string: V100}}, capacity: {milli: {value: "1000"}}, allowMultipleAllocations: true}`
	}
	return y + "]}}"
}

// TestFilterMemoSeesASliceChange: the scheduler keeps a DRA pod's filter
// verdicts per node (fwfiltermemo.go) with the node's DRAStamp, since
// DynamicResources' answer reads the node's ResourceSlice, which the
// node's generation does not follow. Node n's slice shrinks to one GPU
// after s-0 takes it; s-1 (a whole GPU, room left for it in the node's
// thousandths) fails on DynamicResources; when the slice grows back to
// two GPUs, with nothing else of the node changed, s-1 is filtered again
// and bound, where a verdict kept by generation alone would repeat its
// failure for ever.
func TestFilterMemoSeesASliceChange(t *testing.T) {
	dir := twoV100Trace(t)
	sc := parseScenario(t, `name: slice-grows
seed: 1
duration: 2m
scheduler: {gpuModel: dra}
trace: {format: alibaba-gpu-v2023, dir: `+dir+`}
pods:
  - {name: s, count: 2, requests: {cpu: "1", memory: 1Gi, alibaba.com/gpu-milli: "1000"}, arrival: {at: 0s, rate: 0.5}}
events:
  - {at: 1s, createObjects: [`+gpuSliceYAML(1)+`]}
  - {at: 30s, createObjects: [`+gpuSliceYAML(2)+`]}
`)
	s := runSim(t, sc)
	b, msg := boundAt(s), lastMessages(s)
	switch {
	case b["s-0"] < 0 || b["s-0"] >= time.Second:
		t.Fatalf("s-0 bound at %v (%q), want at once", b["s-0"], msg["s-0"])
	case b["s-1"] < 30*time.Second || b["s-1"] > 31*time.Second:
		t.Fatalf("s-1 bound at %v (%q), want within 1s of the slice's growth at 30s", b["s-1"], msg["s-1"])
	}
	if s.order[1].attempts < 2 {
		t.Errorf("s-1 tried %d times, want a failure before the slice grew", s.order[1].attempts)
	}
	checkClaimsMatchPods(t, s)
}

// accelClassYAML is DeviceClass accel of the trace's driver's devices of
// model, with no extendedResourceName: a pod asks for its devices by its
// implicit name, deviceclass.resource.kubernetes.io/accel.
func accelClassYAML(model string) string {
	return `{apiVersion: resource.k8s.io/v1, kind: DeviceClass, metadata: {name: accel}, spec: {selectors: [{cel: {expression: 'device.driver == "gpu.alibaba.com" && device.attributes["gpu.alibaba.com"].model == "` + model + `"'}}]}}`
}

// TestFilterMemoSeesAnImplicitClassChange: a pod that asks for class
// accel's devices by its implicit extended resource name fails while the
// class selects a model node n does not have; once the class is changed
// to select n's V100s, with nothing of the node changed, the pod is
// filtered again and bound. With the class left out of what the pod asks
// (profile's implicitClasses), DynamicResources' answers and the
// scheduler's verdicts of the first cycle were kept, and it stayed
// pending for ever.
func TestFilterMemoSeesAnImplicitClassChange(t *testing.T) {
	dir := twoV100Trace(t)
	sc := parseScenario(t, `name: class-changes
seed: 1
duration: 2m
scheduler: {gpuModel: dra}
trace: {format: alibaba-gpu-v2023, dir: `+dir+`}
objects:
  - `+accelClassYAML("T4")+`
pods:
  - {name: s, count: 1, requests: {cpu: "1", memory: 1Gi, deviceclass.resource.kubernetes.io/accel: "1"}, arrival: {at: 1s}}
events:
  - {at: 30s, createObjects: [`+accelClassYAML("V100")+`]}
`)
	s := runSim(t, sc)
	b, msg := boundAt(s), lastMessages(s)
	if b["s-0"] < 30*time.Second || b["s-0"] > 31*time.Second {
		t.Fatalf("s-0 bound at %v (%q), want within 1s of the class's change at 30s", b["s-0"], msg["s-0"])
	}
	if s.order[0].attempts < 2 {
		t.Errorf("s-0 tried %d times, want a failure before the class changed", s.order[0].attempts)
	}
}

// twoV100Trace writes a trace of one node, n, of two V100s, whose one
// pod comes after the tests' runs (a trace's pod list has a pod).
func twoV100Trace(t *testing.T) string {
	t.Helper()
	return writeTrace(t, "sn,cpu_milli,memory_mib,gpu,model\nn,16000,65536,2,V100\n", timedHeader+
		"w,1000,1024,0,0,,LS,Running,500,600,500\n")
}
