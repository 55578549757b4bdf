package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/schedq/schedq/kube/profile"
)

// The simulator plays, for DRA, the parts of a cluster that kube-scheduler
// relies on but does not run:
//
//   - the API server, for ResourceClaims: DynamicResources writes a
//     claim's allocation and reservation at PreBind and removes the
//     reservation at Unreserve through its clientset; draClient answers
//     those calls from the simulator's objects (objects.byKey) and puts
//     the new version in the informers, as a watch would;
//   - the resourceclaim controller of kube-controller-manager: a pod's
//     claims from templates are created when the pod is (named
//     <pod>-<claim>-<n>, owned by the pod, and listed in its
//     status.resourceClaimStatuses), and when a pod ends (finished,
//     deleted, preempted, evicted with its node) its reservation is
//     removed from each of its claims, a claim reserved for no pod any
//     more is deallocated, and the claims made for the pod are deleted.
//     Without this the devices of ended pods would stay allocated for
//     ever: the plugin frees nothing itself.
//
// Every call runs on the simulator's goroutine: PreBind runs on the
// cycle's (scheduler.Options.SyncPreBind), Unreserve on the cycle's or the
// binding's answer, both in the event loop.

// podClaimAnnotation names, on a claim made from a template, the pod's
// claim it was made for, as the resourceclaim controller writes it.
const podClaimAnnotation = "resource.kubernetes.io/pod-claim-name"

var claimsResource = resourceapi.Resource("resourceclaims")

// draClient returns the clientset the framework's plugins write with: a
// fake one whose ResourceClaim calls (get, update, update of the status,
// strategic merge patch) are answered from the simulator's objects.
func (s *sim) draClient() *fake.Clientset {
	c := profile.FakeClient()
	c.PrependReactor("*", "resourceclaims", s.claimCall)
	c.PrependReactor("patch", "pods", s.podStatusCall)
	s.x.client = c
	return c
}

// forgetCalls drops the calls the plugins' clientset recorded. client-go's
// fake clientset keeps a deep copy of every call it is given, for tests to
// read, and never lets one go: in a replay each placed pod's claim writes
// (its allocation at PreBind, the reservation's removal at Unreserve)
// stayed in memory until the run ended, a copy of the claim each (about
// 14 MB of the 130% draw's 226 MB live heap, which every collection
// marked again). Nothing in the simulator reads them. attempt calls it
// before each attempt, so at most one attempt's and the events' since
// are held. O(1).
func (s *sim) forgetCalls() {
	if c := s.x.client; c != nil {
		c.ClearActions()
	}
}

// claimCall answers one ResourceClaim call of the plugins. Unknown verbs
// fall through to the fake clientset, which holds no claim.
func (s *sim) claimCall(a clienttesting.Action) (bool, runtime.Object, error) {
	switch a.GetVerb() {
	case "get":
		g := a.(clienttesting.GetAction)
		cur := s.storedClaim(g.GetNamespace(), g.GetName())
		if cur == nil {
			return true, nil, apierrors.NewNotFound(claimsResource, g.GetName())
		}
		return true, cur.DeepCopy(), nil
	case "update":
		u := a.(clienttesting.UpdateAction)
		in, ok := u.GetObject().(*resourceapi.ResourceClaim)
		if !ok {
			return true, nil, fmt.Errorf("update of resourceclaims with a %T", u.GetObject())
		}
		nw, err := s.updateClaim(u.GetNamespace(), in.Name, in.ResourceVersion, in.UID, u.GetSubresource(), in)
		return true, nw, err
	case "create":
		in, ok := a.(clienttesting.CreateAction).GetObject().(*resourceapi.ResourceClaim)
		if !ok {
			return true, nil, fmt.Errorf("create of resourceclaims with a %T", a.(clienttesting.CreateAction).GetObject())
		}
		nw, err := s.createClaim(a.GetNamespace(), in)
		return true, nw, err
	case "delete":
		name := a.(clienttesting.DeleteAction).GetName()
		cur := s.storedClaim(a.GetNamespace(), name)
		if cur == nil {
			return true, nil, apierrors.NewNotFound(claimsResource, name)
		}
		if !s.deleteClaim(cur) {
			return true, nil, errors.New("the simulator's informers refused the claim's deletion")
		}
		return true, nil, nil
	case "patch":
		pa := a.(clienttesting.PatchAction)
		cur := s.storedClaim(pa.GetNamespace(), pa.GetName())
		if cur == nil {
			return true, nil, apierrors.NewNotFound(claimsResource, pa.GetName())
		}
		if pa.GetPatchType() != types.StrategicMergePatchType {
			return true, nil, fmt.Errorf("patch of resourceclaims of type %s: the simulator answers strategic merge patches only", pa.GetPatchType())
		}
		in, err := mergePatch(cur, pa.GetPatch())
		if err != nil {
			return true, nil, apierrors.NewBadRequest(err.Error())
		}
		nw, err := s.updateClaim(pa.GetNamespace(), pa.GetName(), "", in.UID, pa.GetSubresource(), in)
		return true, nw, err
	}
	return false, nil, nil
}

// createClaim creates claim in in namespace ns, as the API server would:
// a name generated from its generateName if it has none (deterministic
// here: the next claim number), no status, and a resourceVersion and UID
// of the simulator's (put). DynamicResources creates so the claim of a
// pod's extended resources that DRA backs, at PreBind.
func (s *sim) createClaim(ns string, in *resourceapi.ResourceClaim) (*resourceapi.ResourceClaim, error) {
	c := in.DeepCopy()
	c.Namespace, c.UID, c.ResourceVersion = ns, "", ""
	c.Status = resourceapi.ResourceClaimStatus{}
	c.CreationTimestamp = metav1.Time{Time: s.now}
	switch {
	case c.Name == "" && c.GenerateName == "":
		return nil, apierrors.NewBadRequest("resourceclaims: name or generateName is required")
	case c.Name == "":
		for c.Name == "" || s.storedClaim(ns, c.Name) != nil {
			s.obj.claimSeq++
			c.Name = fmt.Sprintf("%s%05d", c.GenerateName, s.obj.claimSeq)
		}
	case s.storedClaim(ns, c.Name) != nil:
		return nil, apierrors.NewAlreadyExists(claimsResource, c.Name)
	}
	if !s.put(c) {
		return nil, errors.New("the simulator's informers refused the claim")
	}
	return c.DeepCopy(), nil
}

// podStatusCall answers a plugin's patch of a pod's status (DynamicResources
// names there the claim it created for the pod's extended resources), as
// the API server would: a strategic merge patch of the status
// subresource of the pod as the simulator has it, sent to the handlers as
// the pod's update. Other patches of pods fall through to the fake
// clientset, which holds no pod.
func (s *sim) podStatusCall(a clienttesting.Action) (bool, runtime.Object, error) {
	pa := a.(clienttesting.PatchAction)
	if pa.GetSubresource() != "status" {
		return false, nil, nil
	}
	key := types.NamespacedName{Namespace: pa.GetNamespace(), Name: pa.GetName()}
	cur := s.cl.pods[key]
	if cur == nil {
		return true, nil, apierrors.NewNotFound(v1.Resource("pods"), key.Name)
	}
	if pa.GetPatchType() != types.StrategicMergePatchType {
		return true, nil, fmt.Errorf("patch of pods/status of type %s: the simulator answers strategic merge patches only", pa.GetPatchType())
	}
	orig, err := json.Marshal(&v1.Pod{Status: cur.Status})
	if err != nil {
		return true, nil, err
	}
	b, err := strategicpatch.StrategicMergePatch(orig, pa.GetPatch(), &v1.Pod{})
	if err != nil {
		return true, nil, apierrors.NewBadRequest(err.Error())
	}
	patched := &v1.Pod{}
	if err := json.Unmarshal(b, patched); err != nil {
		return true, nil, apierrors.NewBadRequest(err.Error())
	}
	nw := *cur // shallow, as bindDone: only the status is new
	nw.Status = patched.Status
	s.cl.pods[key] = &nw
	s.h.UpdatePod(cur, &nw)
	return true, nw.DeepCopy(), nil
}

// mergePatch applies a strategic merge patch to a claim.
func mergePatch(cur *resourceapi.ResourceClaim, patch []byte) (*resourceapi.ResourceClaim, error) {
	orig, err := json.Marshal(cur)
	if err != nil {
		return nil, err
	}
	b, err := strategicpatch.StrategicMergePatch(orig, patch, &resourceapi.ResourceClaim{})
	if err != nil {
		return nil, err
	}
	out := &resourceapi.ResourceClaim{}
	return out, json.Unmarshal(b, out)
}

// updateClaim writes in over the stored claim ns/name, as the API server
// would: a resourceVersion or UID that is not the stored one is a
// conflict; the status subresource changes only the status, the main
// resource everything but the status.
func (s *sim) updateClaim(ns, name, version string, uid types.UID, sub string, in *resourceapi.ResourceClaim) (*resourceapi.ResourceClaim, error) {
	cur := s.storedClaim(ns, name)
	switch {
	case cur == nil:
		return nil, apierrors.NewNotFound(claimsResource, name)
	case version != "" && version != cur.ResourceVersion, uid != "" && uid != cur.UID:
		return nil, apierrors.NewConflict(claimsResource, name, errors.New("the object has been modified"))
	}
	var nw *resourceapi.ResourceClaim
	switch sub {
	case "status":
		nw = cur.DeepCopy()
		nw.Status = *in.Status.DeepCopy()
	case "":
		nw = in.DeepCopy()
		nw.Status = *cur.Status.DeepCopy()
		nw.UID, nw.DeletionTimestamp = cur.UID, cur.DeletionTimestamp
	default:
		return nil, fmt.Errorf("resourceclaims/%s: no such subresource", sub)
	}
	if !s.put(nw) {
		return nil, errors.New("the simulator's informers refused the claim")
	}
	if !s.meetBindingConditions(nw) {
		return nil, errors.New("the simulator's informers refused the claim")
	}
	if nw.DeletionTimestamp != nil && len(nw.Status.ReservedFor) == 0 {
		// The plugin's write (Unreserve's) left a claim marked deleted
		// reserved for no pod: the controller finishes its deletion,
		// after the write, as an event of its own.
		key := types.NamespacedName{Namespace: ns, Name: name}
		s.at(s.now, func() {
			if c := s.storedClaim(key.Namespace, key.Name); c != nil {
				s.finishClaimDeletion(c)
			}
		})
	}
	return nw.DeepCopy(), nil
}

// meetBindingConditions plays the DRA driver of the devices allocated to
// claim c that have binding conditions (a device attached over a
// fabric, say): once the allocation is written, it sets each such
// device's binding conditions true in the claim's status.devices, a
// write of its own after c's. DynamicResources' PreBind, which waits for
// them before the binding, then finds them at its first look, in the
// assume cache, instead of polling the wall clock. A device whose
// conditions are set already is left alone. False if the informers
// refused the claim (the run fails).
func (s *sim) meetBindingConditions(c *resourceapi.ResourceClaim) bool {
	if c.Status.Allocation == nil {
		return true
	}
	var nw *resourceapi.ResourceClaim
	for _, r := range c.Status.Allocation.Devices.Results {
		if len(r.BindingConditions) == 0 || hasDeviceStatus(c, r) {
			continue
		}
		if nw == nil {
			nw = c.DeepCopy()
		}
		st := resourceapi.AllocatedDeviceStatus{Driver: r.Driver, Pool: r.Pool, Device: r.Device}
		if r.ShareID != nil {
			st.ShareID = ptrTo(string(*r.ShareID))
		}
		for _, cond := range r.BindingConditions {
			st.Conditions = append(st.Conditions, metav1.Condition{Type: cond, Status: metav1.ConditionTrue,
				Reason: "DeviceReady", Message: "the simulator's driver readied the device", LastTransitionTime: metav1.Time{Time: s.now}})
		}
		nw.Status.Devices = append(nw.Status.Devices, st)
	}
	return nw == nil || s.put(nw)
}

// hasDeviceStatus reports whether c's status.devices has an entry for
// allocated device r.
func hasDeviceStatus(c *resourceapi.ResourceClaim, r resourceapi.DeviceRequestAllocationResult) bool {
	return slices.ContainsFunc(c.Status.Devices, func(d resourceapi.AllocatedDeviceStatus) bool {
		return d.Driver == r.Driver && d.Pool == r.Pool && d.Device == r.Device
	})
}

// storedClaim is the claim ns/name as the API server has it, nil if none.
// Read-only.
func (s *sim) storedClaim(ns, name string) *resourceapi.ResourceClaim {
	c, _ := s.obj.byKey[objectKey(&resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})].(*resourceapi.ResourceClaim)
	return c
}

// storedTemplate is the ResourceClaimTemplate ns/name, nil if none.
func (s *sim) storedTemplate(ns, name string) *resourceapi.ResourceClaimTemplate {
	t, _ := s.obj.byKey[objectKey(&resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})].(*resourceapi.ResourceClaimTemplate)
	return t
}

// makeClaims creates, for each of a new pod's claims from a template that
// exists, the claim, and names it in the pod's status (p is changed in
// place: it is not yet in the cluster). A claim whose template does not
// exist yet is made when the template is created (templateCreated); the
// pod waits meanwhile (DynamicResources' PreEnqueue). It reports whether
// it named a claim.
func (s *sim) makeClaims(p *v1.Pod) bool {
	made := false
	for _, pc := range p.Spec.ResourceClaims {
		if pc.ResourceClaimTemplateName == nil || hasClaimStatus(p, pc.Name) {
			continue
		}
		t := s.storedTemplate(p.Namespace, *pc.ResourceClaimTemplateName)
		if t == nil {
			continue
		}
		c := &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{
				Namespace:   p.Namespace,
				Name:        s.newClaimName(p, pc.Name),
				Labels:      t.Spec.Labels,
				Annotations: map[string]string{podClaimAnnotation: pc.Name},
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID,
					Controller: ptrTo(true), BlockOwnerDeletion: ptrTo(true),
				}},
			},
			Spec: *t.Spec.Spec.DeepCopy(),
		}
		if !s.put(c) {
			return made
		}
		p.Status.ResourceClaimStatuses = append(p.Status.ResourceClaimStatuses, v1.PodResourceClaimStatus{Name: pc.Name, ResourceClaimName: ptrTo(c.Name)})
		made = true
	}
	return made
}

// newClaimName names a claim made for pod p's claim pc from a template:
// <pod>-<claim>-<n>, with the next n that no claim of p's namespace has
// (a snapshot's or a forecast state's claims were named by others, and
// put would write over one of the same name, losing its allocation).
func (s *sim) newClaimName(p *v1.Pod, pc string) string {
	for {
		s.obj.claimSeq++
		name := fmt.Sprintf("%s-%s-%d", p.Name, pc, s.obj.claimSeq)
		if s.storedClaim(p.Namespace, name) == nil {
			return name
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

func hasClaimStatus(p *v1.Pod, name string) bool {
	return slices.ContainsFunc(p.Status.ResourceClaimStatuses, func(st v1.PodResourceClaimStatus) bool { return st.Name == name })
}

// templateCreated makes the claims of the pending pods that were waiting
// for template t, and updates those pods (their status now names the
// claims), in the order of their groups. O(pods).
func (s *sim) templateCreated(t *resourceapi.ResourceClaimTemplate) {
	for _, k := range s.cl.podGroupsOrder() {
		old := s.cl.pods[k]
		if old == nil || old.Spec.NodeName != "" || old.Namespace != t.Namespace || !usesTemplate(old, t.Name) {
			continue
		}
		nw := old.DeepCopy()
		if s.makeClaims(nw) {
			s.cl.pods[k] = nw
			s.h.UpdatePod(old, nw)
		}
	}
}

func usesTemplate(p *v1.Pod, name string) bool {
	return slices.ContainsFunc(p.Spec.ResourceClaims, func(pc v1.PodResourceClaim) bool {
		return pc.ResourceClaimTemplateName != nil && *pc.ResourceClaimTemplateName == name
	})
}

// releaseClaims does what the resourceclaim controller does when pod p
// ends: each of its claims loses p's reservation; one that no pod holds
// any more is deallocated (its allocation and DRA's finalizer removed,
// an update that wakes the pods waiting for devices); a claim made for p
// is deleted.
func (s *sim) releaseClaims(p *v1.Pod) {
	for _, name := range ClaimNames(p) {
		cur := s.storedClaim(p.Namespace, name)
		if cur == nil {
			continue
		}
		if held := slices.ContainsFunc(cur.Status.ReservedFor, func(r resourceapi.ResourceClaimConsumerReference) bool { return r.UID == p.UID }); held {
			nw := cur.DeepCopy()
			nw.Status.ReservedFor = slices.DeleteFunc(nw.Status.ReservedFor, func(r resourceapi.ResourceClaimConsumerReference) bool { return r.UID == p.UID })
			if len(nw.Status.ReservedFor) == 0 {
				nw.Status.ReservedFor = nil
				nw.Status.Allocation = nil
				nw.Finalizers = slices.DeleteFunc(nw.Finalizers, func(f string) bool { return f == resourceapi.Finalizer })
			}
			if !s.put(nw) {
				return
			}
			cur = nw
		}
		if len(cur.Status.ReservedFor) > 0 {
			continue
		}
		if gone := cur.DeletionTimestamp != nil && len(cur.Finalizers) == 0; (gone || metav1.IsControlledBy(cur, p)) && !s.remove(cur) {
			return
		}
	}
}

// claimUpdate makes c, the scenario's new version of a claim, what the
// API server stores for an update of the main resource of a claim that
// exists: its status (allocation, reservations), UID, deletion mark and
// finalizers (DRA's, which the scenario's object does not carry, as an
// apply keeps them) stay the stored ones. A spec that differs is refused,
// as the API server refuses it (a ResourceClaim's spec is immutable):
// the run fails. True for a claim that does not exist yet (a creation).
func (s *sim) claimUpdate(c *resourceapi.ResourceClaim) bool {
	old := s.storedClaim(c.Namespace, c.Name)
	if old == nil {
		return true
	}
	if !apiequality.Semantic.DeepEqual(old.Spec, c.Spec) {
		s.fail(fmt.Errorf("createObjects: ResourceClaim %s/%s is invalid: spec: Invalid value: field is immutable", c.Namespace, c.Name))
		return false
	}
	c.UID, c.DeletionTimestamp = old.UID, old.DeletionTimestamp
	c.Status = *old.Status.DeepCopy()
	for _, f := range old.Finalizers {
		if !slices.Contains(c.Finalizers, f) {
			c.Finalizers = append(c.Finalizers, f)
		}
	}
	return true
}

// deleteClaim deletes claim c as the API server and the resourceclaim
// controller do. A claim without DRA's finalizer goes at once. One with
// it (DynamicResources' PreBind adds it with the allocation) is only
// marked deleted: while it is reserved for a pod, it stays, allocated,
// so that its devices are not handed out again under a running pod;
// releaseClaims finishes the deletion when the last of its pods ends.
// Reserved for no pod, the controller deallocates it at once (an update
// that wakes the pods waiting for devices), drops the finalizer, and it
// goes. False if the informers refused a write (the run fails).
func (s *sim) deleteClaim(c *resourceapi.ResourceClaim) bool {
	if !slices.Contains(c.Finalizers, resourceapi.Finalizer) {
		return s.remove(c)
	}
	if c.DeletionTimestamp == nil {
		nw := c.DeepCopy()
		nw.DeletionTimestamp = &metav1.Time{Time: s.now}
		if !s.put(nw) {
			return false
		}
		c = nw
	}
	return s.finishClaimDeletion(c)
}

// settleDeletedClaims does, for the claims a snapshot or a forecast's
// state holds marked deleted and reserved for no pod, what the
// resourceclaim controller does as soon as it sees them
// (finishClaimDeletion): deallocates them and lets them go. Such a state
// caught the controller behind; kept, their devices would stay
// allocated for ever. In key order; O(objects). False if the informers
// refused a write (the run fails).
func (s *sim) settleDeletedClaims() bool {
	for _, k := range slices.Sorted(maps.Keys(s.obj.byKey)) {
		c, ok := s.obj.byKey[k].(*resourceapi.ResourceClaim)
		if ok && c.DeletionTimestamp != nil && len(c.Status.ReservedFor) == 0 && !s.finishClaimDeletion(c) {
			return false
		}
	}
	return true
}

// finishClaimDeletion does what the resourceclaim controller does for a
// claim marked deleted that is reserved for no pod: deallocates it,
// removes DRA's finalizer, and the API server then removes it. A claim
// still reserved, or not marked deleted, is left alone.
func (s *sim) finishClaimDeletion(c *resourceapi.ResourceClaim) bool {
	if c.DeletionTimestamp == nil || len(c.Status.ReservedFor) > 0 {
		return true
	}
	if c.Status.Allocation != nil || slices.Contains(c.Finalizers, resourceapi.Finalizer) {
		nw := c.DeepCopy()
		nw.Status.Allocation = nil
		nw.Finalizers = slices.DeleteFunc(nw.Finalizers, func(f string) bool { return f == resourceapi.Finalizer })
		if !s.put(nw) {
			return false
		}
		c = nw
	}
	if len(c.Finalizers) > 0 {
		return true // another finalizer's owner finishes it
	}
	return s.remove(c)
}

// ClaimNames are the names of pod p's ResourceClaims: those it names,
// and those its status names for its claims from templates (made
// already), as DRA's resourceclaim.Name reads them, and the claim that
// DynamicResources made for its extended resources DRA backs
// (status.extendedResourceClaimStatus); a claim from a template not made
// yet has no name. O(claims × statuses).
func ClaimNames(p *v1.Pod) []string {
	var out []string
	for i := range p.Spec.ResourceClaims {
		if name, _, err := resourceclaim.Name(p, &p.Spec.ResourceClaims[i]); err == nil && name != nil {
			out = append(out, *name)
		}
	}
	if st := p.Status.ExtendedResourceClaimStatus; st != nil && st.ResourceClaimName != "" {
		out = append(out, st.ResourceClaimName)
	}
	return out
}

// holdClaims reserves for running pod p each of its claims that is
// allocated but not reserved for it, as DynamicResources' PreBind does:
// a forecast's state may catch p with its binding under way, its
// allocation made and its reservation not yet. Held, the claim is
// released when p ends (releaseClaims). False if the informers refused
// the claim (the run fails).
func (s *sim) holdClaims(p *v1.Pod) bool {
	for _, name := range ClaimNames(p) {
		cur := s.storedClaim(p.Namespace, name)
		if cur == nil || cur.Status.Allocation == nil ||
			slices.ContainsFunc(cur.Status.ReservedFor, func(r resourceapi.ResourceClaimConsumerReference) bool { return r.UID == p.UID }) {
			continue
		}
		nw := cur.DeepCopy()
		nw.Status.ReservedFor = append(nw.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: p.Name, UID: p.UID})
		if !s.put(nw) {
			return false
		}
	}
	return true
}

// checkDevices is an invariant of DRA, checked after every write of a
// claim when Options.CheckInvariants is set: each allocated device is in
// a ResourceSlice of its driver and pool, no device is allocated to two
// claims unless as shares (consumable capacity), and the shares of a
// device consume no more of a capacity than it has. O(objects).
func (s *sim) checkDevices() error {
	exists := map[string]bool{} // driver/pool/device
	capacity := map[string]map[resourceapi.QualifiedName]int64{}
	owner := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(s.obj.byKey)) {
		if sl, ok := s.obj.byKey[k].(*resourceapi.ResourceSlice); ok {
			for _, d := range sl.Spec.Devices {
				id := sl.Spec.Driver + "/" + sl.Spec.Pool.Name + "/" + d.Name
				exists[id] = true
				for name, c := range d.Capacity {
					if capacity[id] == nil {
						capacity[id] = map[resourceapi.QualifiedName]int64{}
					}
					capacity[id][name] = c.Value.Value()
				}
			}
		}
	}
	consumed := map[string]map[resourceapi.QualifiedName]int64{}
	for _, k := range slices.Sorted(maps.Keys(s.obj.byKey)) {
		c, ok := s.obj.byKey[k].(*resourceapi.ResourceClaim)
		if !ok || c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			id := r.Driver + "/" + r.Pool + "/" + r.Device
			switch {
			case !exists[id]:
				return fmt.Errorf("claim %s/%s is allocated device %s, which no ResourceSlice has", c.Namespace, c.Name, id)
			case r.ShareID != nil:
				if err := consume(consumed, capacity, id, c, r.ConsumedCapacity); err != nil {
					return err
				}
			case owner[id] != "":
				return fmt.Errorf("device %s is allocated to two claims: %s and %s/%s", id, owner[id], c.Namespace, c.Name)
			default:
				owner[id] = c.Namespace + "/" + c.Name
			}
		}
	}
	return nil
}

// consume adds a share's consumption of device id to consumed, and fails
// if a capacity of the device is then exceeded.
func consume(consumed, capacity map[string]map[resourceapi.QualifiedName]int64, id string, c *resourceapi.ResourceClaim, q map[resourceapi.QualifiedName]resource.Quantity) error {
	for name, v := range q {
		if consumed[id] == nil {
			consumed[id] = map[resourceapi.QualifiedName]int64{}
		}
		consumed[id][name] += v.Value()
		if limit, ok := capacity[id][name]; ok && consumed[id][name] > limit {
			return fmt.Errorf("device %s: its shares consume %d of %s, more than its %d (the last by claim %s/%s)", id, consumed[id][name], name, limit, c.Namespace, c.Name)
		}
	}
	return nil
}
