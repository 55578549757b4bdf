package sim

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/schedq/schedq/kube/framework"
)

// draWhatIf makes in's pods claim their GPUs as the trace's pods do when
// st is of a trace replayed with GPUs as DRA devices (its DeviceClass is
// in st.Objects): a pod that asks for alibaba.com/gpu-milli and names no
// claim gets a claim from a ResourceClaimTemplate of its request (whole
// GPUs, or a share of one), which this returns for the runs' objects
// when st has none of that name. Otherwise the request would be counted
// only as the extended resource the replay keeps as bookkeeping, and no
// device would be taken. Idempotent; O(pods + objects).
func (in *WhatIfInput) draWhatIf(st *ForecastState) ([]runtime.Object, error) {
	if !slices.ContainsFunc(st.Objects, isTraceGPUClass) {
		return nil, nil
	}
	have := map[string]bool{}
	for _, o := range st.Objects {
		if t, ok := o.(*resourceapi.ResourceClaimTemplate); ok {
			have[t.Namespace+"/"+t.Name] = true
		}
	}
	var add []runtime.Object
	for _, p := range in.Pods {
		u := usageOfPod(p)
		if u.gpuMilli == 0 || len(p.Spec.ResourceClaims) > 0 || len(p.Spec.Containers) == 0 {
			continue
		}
		r, ok := u.request()
		if !ok {
			return nil, fmt.Errorf("pod %s: %s", framework.Key(p), badRequest(u.gpuMilli))
		}
		name := fmt.Sprintf("whatif-gpu-%dx%d", r.Count, r.Share)
		if !have[p.Namespace+"/"+name] {
			have[p.Namespace+"/"+name] = true
			add = append(add, &resourceapi.ResourceClaimTemplate{
				ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: name},
				Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
					Requests: []resourceapi.DeviceRequest{{Name: "gpu", Exactly: deviceRequest(tracePod{gpus: int64(r.Count), share: r.Share})}},
				}}},
			})
		}
		p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &name}}
		p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpu"}}
	}
	return add, nil
}

func isTraceGPUClass(o runtime.Object) bool {
	c, ok := o.(*resourceapi.DeviceClass)
	return ok && c.Name == traceGPUDriver
}

// draNames are the ResourceClaims and ResourceClaimTemplates of a state
// (namespace/name), if it has DRA's objects at all or its templates are
// unlisted, which only a scheduler watching DRA's claims says (dra):
// otherwise the scheduler's profile may not run DynamicResources, or the
// live scheduler copies none.
type draNames struct {
	dra               bool
	claims, templates map[string]bool
	unlisted          bool // ForecastState.TemplatesUnlisted
}

// draNamesOf lists st's claims and templates. O(objects).
func draNamesOf(st *ForecastState) draNames {
	d := draNames{dra: st.TemplatesUnlisted, claims: map[string]bool{}, templates: map[string]bool{}, unlisted: st.TemplatesUnlisted}
	for _, o := range st.Objects {
		switch x := o.(type) {
		case *resourceapi.ResourceClaim:
			d.claims[x.Namespace+"/"+x.Name] = true
		case *resourceapi.ResourceClaimTemplate:
			d.templates[x.Namespace+"/"+x.Name] = true
		case *resourceapi.DeviceClass, *resourceapi.ResourceSlice:
		default:
			continue
		}
		d.dra = true
	}
	return d
}

// check refuses a what-if pod one of whose claims names a ResourceClaim
// or ResourceClaimTemplate that the state does not have: a what-if adds
// Pods and PodGroups only, so nothing would make it, and the pod, gated
// by DynamicResources for ever, would be answered as if no device were
// free. O(the pod's claims).
func (d draNames) check(p *v1.Pod) error {
	if !d.dra {
		return nil
	}
	for _, pc := range p.Spec.ResourceClaims {
		kind, name, have := "ResourceClaim", pc.ResourceClaimName, d.claims
		if pc.ResourceClaimTemplateName != nil {
			kind, name, have = "ResourceClaimTemplate", pc.ResourceClaimTemplateName, d.templates
		}
		if pc.ResourceClaimTemplateName != nil && d.unlisted {
			return fmt.Errorf("pod %s: claims from ResourceClaimTemplate %s/%s (spec.resourceClaims %s), but the scheduler has not listed the templates "+
				"(its role must grant list and watch of resourceclaimtemplates), so the pod's claim could not be made",
				framework.Key(p), p.Namespace, *name, pc.Name)
		}
		if name != nil && !have[p.Namespace+"/"+*name] {
			return fmt.Errorf("pod %s: %s %s/%s (spec.resourceClaims %s) does not exist; a what-if adds Pods and PodGroups only",
				framework.Key(p), kind, p.Namespace, *name, pc.Name)
		}
	}
	return nil
}

// checkClaimEntries refuses what the API server would in a pod's
// spec.resourceClaims: an entry without a name, or with neither or both
// of a claim and a template. Unchecked, DynamicResources kept such a pod
// out for ever (neither) or used the claim (both). O(the pod's claims).
func checkClaimEntries(p *v1.Pod) error {
	for i, pc := range p.Spec.ResourceClaims {
		switch {
		case pc.Name == "":
			return fmt.Errorf("pod %s: spec.resourceClaims[%d]: no name", framework.Key(p), i)
		case (pc.ResourceClaimName == nil) == (pc.ResourceClaimTemplateName == nil):
			return fmt.Errorf("pod %s: spec.resourceClaims %s: needs exactly one of resourceClaimName and resourceClaimTemplateName", framework.Key(p), pc.Name)
		}
	}
	return nil
}
