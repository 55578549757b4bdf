package sim

import (
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GPUModelDRA models a trace's GPUs as DRA devices (scheduler.gpuModel:
// dra), allocated by kube-scheduler's DynamicResources plugin.
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
// request share a template, named in order of first use.
//
// Nodes keep their extended resource of thousandths and pods their
// request of it, as bookkeeping: the report's GPU allocation is measured
// from them as in the other models. NodeResourcesFit's check of it is
// implied by the devices' (a pod's thousandths are what its devices
// consume), so it never refuses a node DRA accepts.
func (s *sim) traceGPUsAsDevices(t *alibabaTrace) {
	class := &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: traceGPUDriver},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", traceGPUDriver)},
		}}},
	}
	if !s.put(class) {
		return
	}
	for _, n := range t.nodes {
		q, ok := n.Status.Capacity[ResourceGPUMilli]
		if !ok {
			continue
		}
		if !s.put(gpuSlice(n.Name, n.Labels[LabelGPUModel], int(q.Value()/1000))) {
			return
		}
	}
	templates := map[string]string{} // request: template name
	for _, tp := range t.pods {
		if tp.gpus == 0 {
			continue
		}
		p := tp.pod
		p.Spec.Affinity = nil // alibabaPod's only affinity is gpu_spec's
		req := deviceRequest(tp)
		key := fmt.Sprintf("%d/%d/%s", tp.gpus, tp.share, strings.Join(tp.models, "|"))
		name, ok := templates[key]
		if !ok {
			name = "gpu-request-" + strconv.Itoa(len(templates))
			templates[key] = name
			tmpl := &resourceapi.ResourceClaimTemplate{
				ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: name},
				Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
					Requests: []resourceapi.DeviceRequest{{Name: "gpu", Exactly: req}},
				}}},
			}
			if !s.put(tmpl) {
				return
			}
		}
		p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &name}}
		p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpu"}}
	}
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
