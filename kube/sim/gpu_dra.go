package sim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// GPUModelDRA models a trace's GPUs as DRA devices (scheduler.gpuModel:
// dra, the default), allocated by kube-scheduler's DynamicResources plugin.
const GPUModelDRA = "dra"

// The trace's GPUs as DRA sees them: one driver and DeviceClass, each GPU
// a device with a model attribute and a consumable capacity of 1000
// thousandths.
const (
	traceGPUDriver   = "gpu.alibaba.com"
	traceGPUCapacity = "milli"
)

// traceGPUsAsDevices turns the trace's GPUs into DRA objects, before its
// nodes join and its pods arrive: each GPU node publishes a ResourceSlice
// (its pool) of one device per GPU, with the node's model as the
// attribute "model" and a capacity "milli" of 1000 that several claims
// may share (allowMultipleAllocations: consumable capacity); each GPU pod
// loses its node affinity on the model and claims from a
// ResourceClaimTemplate: num_gpu whole devices, or a share of gpu_milli
// of one, with gpu_spec as a CEL selector on the model. Pods with one
// request in one namespace share a template (a pod can only use its own
// namespace's), named in order of first use.
//
// Nodes keep their extended resource of thousandths and pods their
// request of it, as bookkeeping: the report's GPU allocation is measured
// from them as in the other models. NodeResourcesFit's check of it is
// implied by the devices' (a pod's thousandths are what its devices
// consume), so it never refuses a node DRA accepts.
//
// The DeviceClass selects every device (traceGPUClass) while the trace's
// slices are the only ones; a scenario's slice of another driver narrows
// it to the trace's driver (narrowTraceClass).
func (s *sim) traceGPUsAsDevices(t *alibabaTrace) error {
	if !s.put(traceGPUClass(s.hasForeignSlices())) {
		return nil
	}
	for _, n := range t.nodes {
		q, ok := n.Status.Capacity[ResourceGPUMilli]
		if !ok {
			continue
		}
		if !s.put(gpuSlice(n.Name, n.Labels[LabelGPUModel], int(q.Value()/1000))) {
			return nil
		}
	}
	templates := map[string]string{} // request: template name
	for _, tp := range t.pods {
		if tp.gpus == 0 {
			continue
		}
		p := tp.pod
		p.Spec.Affinity = nil // alibabaPod's only affinity is gpu_spec's
		name, ok := s.gpuTemplate(templates, p.Namespace, tp)
		if !ok {
			return nil
		}
		p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &name}}
		p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpu"}}
	}
	return s.scenarioGPUClaims(templates)
}

// gpuTemplate is the name of the ResourceClaimTemplate of namespace ns
// for tp's request, which it creates on first use (templates holds the
// names given). ok is false if the run failed.
func (s *sim) gpuTemplate(templates map[string]string, ns string, tp tracePod) (string, bool) {
	key := fmt.Sprintf("%s/%d/%d/%s", ns, tp.gpus, tp.share, strings.Join(tp.models, "|"))
	if name, ok := templates[key]; ok {
		return name, true
	}
	name := "gpu-request-" + strconv.Itoa(len(templates))
	templates[key] = name
	tmpl := &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{Name: "gpu", Exactly: deviceRequest(tp)}},
		}}},
	}
	return name, s.put(tmpl)
}

// scenarioGPUClaims gives the scenario's pod groups that ask for the
// trace's GPUs (alibaba.com/gpu-milli) and name no claim a claim of
// their request, as the trace's pods: a template (shared with the
// trace's pods of the same request), which their pods name when they
// arrive (claimGPUs). Otherwise they would take the extended resource
// the replay keeps as bookkeeping and no device. A request that is
// neither a share of one GPU nor whole GPUs is refused.
func (s *sim) scenarioGPUClaims(templates map[string]string) error {
	for i := range s.sc.Pods {
		g := &s.sc.Pods[i]
		requests, err := resources(g.Requests)
		if err != nil || len(g.ResourceClaims.v) > 0 {
			continue // refused by validation; or claims of its own
		}
		q := requests[ResourceGPUMilli]
		u := podUsage{gpuMilli: q.Value()}
		if u.gpuMilli == 0 {
			continue
		}
		r, ok := u.request()
		if !ok {
			return fmt.Errorf("pods[%d].requests: %s: %s (gpuModel %s claims whole devices or a share of one)", i, ResourceGPUMilli, badRequest(u.gpuMilli), GPUModelDRA)
		}
		ns := cmpOr(g.Namespace, "default")
		name, ok := s.gpuTemplate(templates, ns, tracePod{gpus: int64(r.Count), share: r.Share})
		if !ok {
			return nil
		}
		if s.x.gpuClaims == nil {
			s.x.gpuClaims = map[string]string{}
		}
		s.x.gpuClaims[g.Name] = name
	}
	return nil
}

// claimGPUs makes a new pod of group g claim its GPUs from the template
// scenarioGPUClaims chose for g, if any. The pod's containers are
// copied first: a group's pods share them.
func (s *sim) claimGPUs(g *PodGroup, p *v1.Pod) {
	name, ok := s.x.gpuClaims[g.Name]
	if !ok {
		return
	}
	p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &name}}
	p.Spec.Containers = slices.Clone(p.Spec.Containers)
	p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpu"}}
}

// traceGPUClass is the trace's DeviceClass. Narrow, it selects the
// devices of the trace's driver by a CEL selector; otherwise it has no
// selector and selects every device. Both select the same devices while
// the trace's driver is the only one, but the allocator evaluates a
// class's selectors for each device it considers on each node it
// filters, and that CEL evaluation was about 30% of the CPU of a replay.
func traceGPUClass(narrow bool) *resourceapi.DeviceClass {
	c := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: traceGPUDriver}}
	if narrow {
		c.Spec.Selectors = []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", traceGPUDriver)},
		}}
	}
	return c
}

// hasForeignSlices reports whether a ResourceSlice of a driver other
// than the trace's exists. O(objects).
func (s *sim) hasForeignSlices() bool {
	for _, o := range s.obj.byKey {
		if sl, ok := o.(*resourceapi.ResourceSlice); ok && sl.Spec.Driver != traceGPUDriver {
			return true
		}
	}
	return false
}

// narrowTraceClass gives the trace's DeviceClass its selector on the
// trace's driver once a slice of another driver is created (obj), so
// that the trace's claims never take that driver's devices. A no-op
// without a trace's class, or with one already narrow. It reports false
// if the run failed.
func (s *sim) narrowTraceClass(obj runtime.Object) bool {
	sl, ok := obj.(*resourceapi.ResourceSlice)
	if !ok || sl.Spec.Driver == traceGPUDriver || s.sc.Trace == nil || s.sc.Scheduler.gpuModel() != GPUModelDRA {
		return true
	}
	cur, ok := s.obj.byKey[objectKey(traceGPUClass(false))].(*resourceapi.DeviceClass)
	if !ok || len(cur.Spec.Selectors) > 0 {
		return true
	}
	return s.put(traceGPUClass(true))
}

// gpuSlice is node's ResourceSlice: gpus devices of model.
func gpuSlice(node, model string, gpus int) *resourceapi.ResourceSlice {
	yes := true
	sl := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-gpus"},
		Spec: resourceapi.ResourceSliceSpec{
			Driver: traceGPUDriver, NodeName: &node,
			Pool: resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
		},
	}
	for i := range gpus {
		sl.Spec.Devices = append(sl.Spec.Devices, resourceapi.Device{
			Name:                     "gpu-" + strconv.Itoa(i),
			Attributes:               map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"model": {StringValue: &model}},
			Capacity:                 map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{traceGPUCapacity: {Value: *resource.NewQuantity(1000, resource.DecimalSI)}},
			AllowMultipleAllocations: &yes,
		})
	}
	return sl
}

// deviceRequest is a trace pod's request: num_gpu whole devices (each
// consumes its whole capacity), or one device of which it consumes
// gpu_milli; gpu_spec's models as a selector.
func deviceRequest(tp tracePod) *resourceapi.ExactDeviceRequest {
	req := &resourceapi.ExactDeviceRequest{DeviceClassName: traceGPUDriver, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: tp.gpus}
	if tp.share < 1000 {
		req.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{
			traceGPUCapacity: *resource.NewQuantity(tp.share, resource.DecimalSI),
		}}
	}
	if len(tp.models) > 0 {
		req.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: fmt.Sprintf("device.attributes[%q].model in [%s]", traceGPUDriver, quoteAll(tp.models)),
		}}}
	}
	return req
}

func quoteAll(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = strconv.Quote(x)
	}
	return strings.Join(q, ", ")
}

// draAssigned lists the GPUs of its node that DRA allocated the bound
// pod's claims, as the API server stores them (fragMeter's source with
// gpuModel dra). O(the pod's claims × their devices).
func (s *sim) draAssigned(p *v1.Pod) []int {
	return allocatedGPUs(p, p.Spec.NodeName, func(ns, name string) (*resourceapi.ResourceClaim, error) {
		if c := s.storedClaim(ns, name); c != nil {
			return c, nil
		}
		return nil, fmt.Errorf("no claim %s/%s", ns, name)
	})
}
