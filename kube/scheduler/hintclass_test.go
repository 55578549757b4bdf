package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/profile"
)

// defaultFrameworkHints returns the hints of the framework path with
// kube-scheduler's default profile, as UseFrameworkHints merges them.
func defaultFrameworkHints(t *testing.T) schedq.Config[types.NamespacedName, *v1.Pod] {
	t.Helper()
	fw := defaultFramework(t)
	qc := testQueueConfig(t)
	if err := UseFrameworkHints(context.Background(), &qc, fw, klog.Background()); err != nil {
		t.Fatal(err)
	}
	return qc
}

// Small pools, so that random events often concern random pods.
var (
	genNamespaces = []string{"default", "team-a"}
	genApps       = []string{"web", "db", "batch"}
	genZones      = []string{"z1", "z2"}
	genClaims     = []string{"data-0", "data-1", "logs"}
	genGroups     = []string{"g1", "g2"}
)

func pick[E any](r *rand.Rand, s []E) E { return s[r.IntN(len(s))] }

// genTemplate makes a random pod template: every field some hint reads
// is drawn at random, or left out.
func genTemplate(r *rand.Rand) *v1.Pod {
	ns, app := pick(r, genNamespaces), pick(r, genApps)
	p := pod("tmpl", int64(100*(1+r.IntN(4))))
	p.Namespace = ns
	p.Labels = map[string]string{"app": app}
	if r.IntN(2) == 0 {
		p.Labels["tier"] = pick(r, []string{"front", "back"})
	}
	if r.IntN(3) == 0 {
		p.Spec.NodeSelector = map[string]string{zoneLabel: pick(r, genZones)}
	}
	if r.IntN(3) == 0 {
		p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
			NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "disk", Operator: v1.NodeSelectorOpIn, Values: []string{"ssd"}}}}},
		}}}
	}
	if r.IntN(3) == 0 {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &v1.Affinity{}
		}
		term := v1.PodAffinityTerm{TopologyKey: zoneLabel, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": pick(r, genApps)}}}
		if r.IntN(2) == 0 {
			p.Spec.Affinity.PodAntiAffinity = &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{term}}
		} else {
			p.Spec.Affinity.PodAffinity = &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{term}}
		}
	}
	if r.IntN(3) == 0 {
		p.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: pick(r, []string{"gpu", "db"}), Effect: v1.TaintEffectNoSchedule}}
	}
	if r.IntN(3) == 0 {
		c := v1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: zoneLabel, WhenUnsatisfiable: v1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}
		if r.IntN(2) == 0 {
			c.NodeTaintsPolicy = ptr(v1.NodeInclusionPolicyHonor)
		}
		p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{c}
	}
	if r.IntN(3) == 0 {
		p.Spec.Volumes = []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: pick(r, genClaims)}}}}
	}
	if r.IntN(4) == 0 {
		p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
	}
	if r.IntN(4) == 0 {
		p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "wait"}}
	}
	if r.IntN(4) == 0 {
		p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr(pick(r, genGroups))}
	}
	if r.IntN(3) == 0 {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app, UID: types.UID(app), Controller: ptr(true)}}
	}
	switch r.IntN(8) {
	case 0: // a claim of its own: never shares a class
		p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr("gpu")}}
		p.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: ptr("generated")}}
	case 1: // a generic ephemeral volume, its claim named after the pod
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}})
	}
	return p
}

// genReplica copies tmpl as the controller would: a name, a UID and
// the queue's status of its own.
func genReplica(r *rand.Rand, tmpl *v1.Pod, i int) *v1.Pod {
	p := tmpl.DeepCopy()
	p.Name = fmt.Sprintf("%s-%d", tmpl.Labels["app"], i)
	p.GenerateName = tmpl.Labels["app"] + "-"
	p.UID = types.UID(fmt.Sprint("uid-", i))
	p.ResourceVersion = fmt.Sprint(r.IntN(1000))
	p.CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(r.IntN(3600)) * time.Second))
	if r.IntN(3) == 0 {
		p.Status.NominatedNodeName = pick(r, []string{"n1", "n2"})
	}
	p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: "Unschedulable"}}
	p.Status.Phase = v1.PodPending
	if r.IntN(2) == 0 { // annotations that vary per replica, which no hint reads
		p.Annotations = map[string]string{ExpectedRuntimeAnnotation: fmt.Sprintf("%dm", 1+r.IntN(60))}
		if r.IntN(2) == 0 {
			p.Annotations[FailureAnnotation] = fmt.Sprintf(`{"plugins":["NodeResourcesFit"],"nodes":"%x"}`, r.Uint64())
		}
	}
	for i := range p.Status.ResourceClaimStatuses {
		p.Status.ResourceClaimStatuses[i].ResourceClaimName = ptr(p.Name + "-gpu") // generated for this pod
	}
	return p
}

// genNode makes a random node from the small pools.
func genNode(r *rand.Rand) *v1.Node {
	n := zonedNode(pick(r, []string{"n1", "n2", "n3"}), pick(r, genZones))
	n.Status.Allocatable[v1.ResourceCPU] = *resource.NewMilliQuantity(int64(200*(1+r.IntN(4))), resource.DecimalSI)
	if r.IntN(2) == 0 {
		n.Labels["disk"] = pick(r, []string{"ssd", "hdd"})
	}
	if r.IntN(2) == 0 {
		n.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: pick(r, []string{"gpu", "db"}), Effect: v1.TaintEffectNoSchedule}}
	}
	n.Spec.Unschedulable = r.IntN(4) == 0
	return n
}

// genObject makes a random object of kind (nil for a kind it does not
// know: the hint then gets a typed nil and answers as it answers every pod).
func genObject(r *rand.Rand, kind string, pods []*v1.Pod) any {
	switch kind {
	case clusterevent.Node:
		return genNode(r)
	case clusterevent.Pod, clusterevent.AssignedPod, clusterevent.UnscheduledPod, clusterevent.TargetPod:
		p := pick(r, pods).DeepCopy() // often one of the judged pods itself
		if kind == clusterevent.AssignedPod || kind == clusterevent.Pod && r.IntN(2) == 0 {
			p.Spec.NodeName = pick(r, []string{"n1", "n2", "n3"})
		}
		if r.IntN(2) == 0 {
			p.Labels = map[string]string{"app": pick(r, genApps)}
		}
		if r.IntN(3) == 0 {
			p.Spec.Tolerations = nil
		}
		return p
	case clusterevent.PersistentVolumeClaim:
		name := pick(r, genClaims)
		if r.IntN(2) == 0 {
			name = pick(r, pods).Name + "-scratch" // a generic ephemeral volume's claim
		}
		return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: pick(r, genNamespaces), Name: name},
			Spec: v1.PersistentVolumeClaimSpec{VolumeName: pick(r, []string{"", "pv1"}), StorageClassName: ptr("fast")}}
	case clusterevent.PersistentVolume:
		return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1", Labels: map[string]string{zoneLabel: pick(r, genZones)}},
			Spec: v1.PersistentVolumeSpec{ClaimRef: &v1.ObjectReference{Namespace: pick(r, genNamespaces), Name: pick(r, genClaims)}}}
	case clusterevent.StorageClass:
		return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Provisioner: "csi.example"}
	case clusterevent.CSINode:
		return &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: pick(r, []string{"n1", "n2"})},
			Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "csi.example", Allocatable: &storagev1.VolumeNodeResources{Count: ptr(int32(r.IntN(3)))}}}}}
	case clusterevent.CSIDriver:
		return &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "csi.example"}, Spec: storagev1.CSIDriverSpec{StorageCapacity: ptr(r.IntN(2) == 0)}}
	case clusterevent.CSIStorageCapacity:
		return &storagev1.CSIStorageCapacity{ObjectMeta: metav1.ObjectMeta{Namespace: pick(r, genNamespaces), Name: "cap"}, StorageClassName: "fast"}
	case clusterevent.VolumeAttachment:
		return &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va"}, Spec: storagev1.VolumeAttachmentSpec{NodeName: pick(r, []string{"n1", "n2"})}}
	case clusterevent.ResourceClaim:
		return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: pick(r, genNamespaces), Name: pick(r, pods).Name + "-gpu"}}
	case clusterevent.PodGroup:
		return &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: pick(r, genNamespaces), Name: pick(r, genGroups)}}
	}
	return nil
}

// genEvent makes old and new objects for one action of reg: an add, an
// update or a delete, as reg's action bits allow.
func genEvent(r *rand.Rand, reg schedq.Event, pods []*v1.Pod) (oldObj, newObj any) {
	var choices []int
	if reg.Action&clusterevent.Add != 0 {
		choices = append(choices, 0)
	}
	if reg.Action&clusterevent.Delete != 0 {
		choices = append(choices, 1)
	}
	if reg.Action&^(clusterevent.Add|clusterevent.Delete) != 0 || len(choices) == 0 {
		choices = append(choices, 2)
	}
	switch pick(r, choices) {
	case 0:
		return nil, genObject(r, reg.Kind, pods)
	case 1:
		return genObject(r, reg.Kind, pods), nil
	}
	return genObject(r, reg.Kind, pods), genObject(r, reg.Kind, pods)
}

// classViolations generates pods of several templates and events for
// every registration of hints, and returns, for each pair of pods of
// one class (by class) that a hint answered differently, a line naming
// the hint, the event and the pods. skip is how the queue reads an
// answer: Skip without an error.
func classViolations(seed uint64, hints map[string][]schedq.EventHint[*v1.Pod], class func(*v1.Pod) uint64) []string {
	r := rand.New(rand.NewPCG(seed, 7))
	var pods []*v1.Pod
	var tmpls []*v1.Pod
	for range 6 {
		tmpl := genTemplate(r)
		if len(tmpls) > 0 && r.IntN(2) == 0 {
			// A sibling that differs only in its namespace or labels.
			tmpl = pick(r, tmpls).DeepCopy()
			if r.IntN(2) == 0 {
				tmpl.Namespace = pick(r, genNamespaces)
			} else {
				tmpl.Labels = map[string]string{"app": pick(r, genApps)}
			}
		}
		tmpls = append(tmpls, tmpl)
		for range 1 + r.IntN(4) {
			pods = append(pods, genReplica(r, tmpl, len(pods)))
		}
	}
	var out []string
	for plugin, regs := range hints {
		for _, h := range regs {
			if h.Fn == nil {
				continue
			}
			for range 8 {
				oldObj, newObj := genEvent(r, h.Event, pods)
				first := map[uint64]*v1.Pod{}
				answer := map[uint64]bool{}
				for _, p := range pods {
					v, err := h.Fn(p, oldObj, newObj)
					skip := err == nil && v == schedq.HintSkip
					c := class(p)
					if q, ok := first[c]; !ok {
						first[c], answer[c] = p, skip
					} else if answer[c] != skip {
						out = append(out, fmt.Sprintf("%s on %s: %s skips=%v, %s skips=%v", plugin, h.Event.Label, q.Name, answer[c], p.Name, skip))
					}
				}
			}
		}
	}
	return out
}

// TestPodHintClassIsSound is the property the queue relies on: for the
// default profile's registrations on the framework path, any two pods of
// one class get the same answer from every hint, for random templates,
// replicas and events (events about the judged pods themselves
// included).
func TestPodHintClassIsSound(t *testing.T) {
	qc := defaultFrameworkHints(t)
	if qc.HintClass == nil {
		t.Fatal("UseFrameworkHints set no HintClass")
	}
	for seed := range uint64(40) {
		for _, v := range classViolations(seed, qc.Hints, qc.HintClass) {
			t.Errorf("seed %d: %s", seed, v)
		}
	}
	if t.Failed() {
		return
	}
	// The property is not vacuous: replicas of a template do share.
	r := rand.New(rand.NewPCG(1, 1))
	tmpl := genTemplate(r)
	for !shareable(tmpl) {
		tmpl = genTemplate(r)
	}
	if PodHintClass(genReplica(r, tmpl, 1)) != PodHintClass(genReplica(r, tmpl, 2)) {
		t.Fatal("two replicas of one template have two classes")
	}
}

// TestPodHintClassPropertyHasTeeth: classes that leave out what the hints
// read (the namespace, the labels) are caught by the property.
func TestPodHintClassPropertyHasTeeth(t *testing.T) {
	qc := defaultFrameworkHints(t)
	specOnly := func(p *v1.Pod) uint64 {
		b, _ := json.Marshal(&p.Spec)
		return xxhash.Sum64(b)
	}
	withNamespace := func(p *v1.Pod) uint64 {
		b, _ := json.Marshal(&p.Spec)
		return xxhash.Sum64(append(b, p.Namespace...))
	}
	everyone := func(p *v1.Pod) uint64 { // PodHintClass without its exceptions
		b, _ := json.Marshal(classView{NS: p.Namespace, Labels: p.Labels, Annotations: classAnnotations(p.Annotations), Owners: p.OwnerReferences, Spec: &p.Spec})
		return xxhash.Sum64(b)
	}
	for name, class := range map[string]func(*v1.Pod) uint64{"spec only": specOnly, "spec and namespace": withNamespace, "no exceptions": everyone} {
		found := 0
		for seed := range uint64(40) {
			found += len(classViolations(seed, qc.Hints, class))
		}
		t.Logf("%s: %d violations", name, found)
		if found == 0 {
			t.Errorf("%s: the property found no violation", name)
		}
	}
}

func TestPodHintClassUnshareable(t *testing.T) {
	a, b := pod("a", 100), pod("b", 100)
	if PodHintClass(a) != PodHintClass(b) || PodHintClass(a)&1 != 0 {
		t.Fatalf("alike pods: classes %x and %x, want one even class", PodHintClass(a), PodHintClass(b))
	}
	for name, mutate := range map[string]func(*v1.Pod){
		"claim": func(p *v1.Pod) { p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "c"}} },
		"ephemeral": func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "e", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}}}
		},
		"resizing": func(p *v1.Pod) { p.Status.Conditions = []v1.PodCondition{{Type: v1.PodResizePending}} },
		"statuses": func(p *v1.Pod) { p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "c"}} },
	} {
		a, b := pod("a", 100), pod("b", 100)
		mutate(a)
		mutate(b)
		if PodHintClass(a) == PodHintClass(b) || PodHintClass(a)&1 != 1 {
			t.Errorf("%s: classes %x and %x, want two odd ones", name, PodHintClass(a), PodHintClass(b))
		}
	}
}

// hintCounter is a schedq.Recorder that counts hint calls by plugin.
type hintCounter struct{ calls map[string]int }

func (*hintCounter) Incoming(schedq.Location, string)                             {}
func (*hintCounter) Left(schedq.Location, time.Duration)                          {}
func (*hintCounter) Scheduled(time.Duration, bool)                                {}
func (*hintCounter) HintStart() int64                                             { return 0 }
func (*hintCounter) Moved(string, int, int)                                       {}
func (*hintCounter) IncomingGroup(schedq.Location, string, int)                   {}
func (*hintCounter) JoinedGroup(schedq.Location, string, int)                     {}
func (*hintCounter) Popped(string)                                                {}
func (c *hintCounter) HintDone(_ int64, plugin, _ string, _ schedq.Hint, _ error) { c.calls[plugin]++ }

// replicaRun schedules 100 replicas of one template on the framework
// path (the default profile) on a node with room for two, then adds a big
// node and counts the hint calls of that one event; it returns the calls
// and where every pod went in the end. classes false turns HintClass off.
func replicaRun(t *testing.T, classes bool) (map[string]int, map[string]string) {
	t.Helper()
	fw := defaultFramework(t)
	qc := QueueConfig()
	if err := UseFrameworkHints(context.Background(), &qc, fw, klog.Background()); err != nil {
		t.Fatal(err)
	}
	if !classes {
		qc.HintClass = nil
	}
	rec := &hintCounter{calls: map[string]int{}}
	qc.Recorder = rec
	q, err := schedq.New(qc)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	c := NewCache()
	b := &syncBinder{}
	h := &Handlers{Queue: q, Cache: c, SchedulerName: "schedq"}
	s := mustNew(t, q, c, b, &recReporter{}, Options{Profiles: []*profile.Framework{fw}, Rand: rand.New(rand.NewPCG(1, 1))})
	h.AddNode(zonedNode("small", "a"))
	tmpl := pod("tmpl", 3000)
	tmpl.Labels = map[string]string{"app": "web"}
	for i := range 100 {
		h.AddPod(genReplica(rand.New(rand.NewPCG(uint64(i), 1)), tmpl, i))
	}
	placed := map[string]string{}
	drain := func() {
		for {
			info, err := q.Pop(ended)
			if err != nil {
				return
			}
			if o := s.ScheduleOne(context.Background(), info); o.Result == Scheduled {
				placed[info.Item.Name] = o.Node
			}
		}
	}
	drain()
	if got := q.Counts().Unschedulable; got != 98 {
		t.Fatalf("%d pods parked, want 98 (two fit on the small node)", got)
	}
	clear(rec.calls)
	big := zonedNode("big", "a")
	big.Status.Allocatable[v1.ResourceCPU] = *resource.NewMilliQuantity(30000, resource.DecimalSI)
	h.AddNode(big)
	calls := maps.Clone(rec.calls)
	drain()
	return calls, placed
}

// TestHintClassAsksOncePerTemplate: with the class, a node added while 98
// replicas of one template are parked costs one call of each hint, not
// 98; and every pod lands where it lands without the class.
func TestHintClassAsksOncePerTemplate(t *testing.T) {
	with, placedWith := replicaRun(t, true)
	without, placedWithout := replicaRun(t, false)
	if without["NodeResourcesFit"] != 98 {
		t.Fatalf("without classes: %v hint calls, want 98 of NodeResourcesFit", without)
	}
	for plugin, n := range with {
		if n != 1 {
			t.Errorf("with classes: %s asked %d times, want once", plugin, n)
		}
	}
	if with["NodeResourcesFit"] != 1 {
		t.Errorf("with classes: %v, want one call of NodeResourcesFit", with)
	}
	if !maps.Equal(placedWith, placedWithout) {
		t.Errorf("placements differ with the class:\n with    %v\n without %v", placedWith, placedWithout)
	}
	if len(placedWith) != 12 {
		t.Errorf("%d pods placed, want 12 (2 on the small node, 10 on the big one)", len(placedWith))
	}
}

// TestPodHintClassIgnoresInertAnnotations: replicas that differ only in
// an annotation no plugin or hint reads (a declared runtime, a failure
// record) share a class; replicas that differ in any other annotation
// keep two.
func TestPodHintClassIgnoresInertAnnotations(t *testing.T) {
	annotated := func(name string, kv ...string) *v1.Pod {
		p := pod(name, 100)
		p.Annotations = map[string]string{"team": "a"}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Annotations[kv[i]] = kv[i+1]
		}
		return p
	}
	for _, key := range InertAnnotations {
		a, b := annotated("a", key, "10m"), annotated("b", key, "70m")
		if PodHintClass(a) != PodHintClass(b) {
			t.Errorf("%s: pods differing only in it have classes %x and %x, want one", key, PodHintClass(a), PodHintClass(b))
		}
		if c := annotated("c"); PodHintClass(a) != PodHintClass(c) {
			t.Errorf("%s: a pod with it and one without have classes %x and %x, want one", key, PodHintClass(a), PodHintClass(c))
		}
	}
	if a, b := annotated("a", ExpectedRuntimeAnnotation, "1h"), annotated("b", FailureAnnotation, "{}"); PodHintClass(a) != PodHintClass(b) {
		t.Errorf("pods differing only in inert annotations: classes %x and %x, want one", PodHintClass(a), PodHintClass(b))
	}
	for _, key := range []string{"team", "example.com/read-by-a-plugin", "schedq.io/other"} {
		a, b := annotated("a", key, "x"), annotated("b", key, "y")
		if PodHintClass(a) == PodHintClass(b) {
			t.Errorf("%s: pods differing in it share class %x, want two", key, PodHintClass(a))
		}
	}
}
