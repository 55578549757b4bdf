package sim

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/internal/yamlnum"
	"github.com/schedq/schedq/kube/profile"
)

// maxSnapshotFileBytes is the largest snapshot file read; a larger one is
// refused before it is read (a variable for tests).
var maxSnapshotFileBytes int64 = 256 << 20

const snapshotGroup = "snapshot"

// takenOverBy lists the scheduler names whose pending pods the simulated
// scheduler places when its profile is named profile: its own, and the
// profile's, as schedq scheduler with that profile would; the default
// scheduler's (kube-scheduler's default profile, and a profile that sets
// no name) takes the pods without a name too.
func takenOverBy(profile string) []string {
	if profile == "" || profile == v1.DefaultSchedulerName {
		return []string{"", v1.DefaultSchedulerName, schedulerName}
	}
	return []string{profile, schedulerName}
}

// SnapshotSummary says what a snapshot held.
type SnapshotSummary struct {
	Path  string `json:"path"`
	Nodes int    `json:"nodes"`
	// Bound pods run on the nodes; BoundOther of them were placed by
	// other schedulers. Pending pods are placed by the simulated
	// scheduler; LeftAlone pending pods belong to other schedulers and
	// Terminal pods had finished: both are left out.
	Bound      int `json:"boundPods"`
	BoundOther int `json:"boundByOtherSchedulers"`
	Pending    int `json:"pendingPods"`
	LeftAlone  int `json:"leftToOtherSchedulers"`
	Terminal   int `json:"terminalPods"`
	// Objects are the volumes, claims, classes and DRA objects it held.
	Objects int `json:"objects,omitempty"`
	// Budgets are its PodDisruptionBudgets, which preemption respects
	// where it can.
	Budgets int `json:"podDisruptionBudgets,omitempty"`
}

// snapshotObjects is what the snapshot's files hold, in file order.
type snapshotObjects struct {
	nodes      []*v1.Node
	pods       []*v1.Pod
	namespaces []*v1.Namespace
	budgets    []*policyv1.PodDisruptionBudget
	// others are what only kube-scheduler's plugins read: volumes,
	// claims, storage classes, CSI nodes and DRA's objects.
	others []runtime.Object
	// origin says where each object was read (originOf); at is the
	// document being read.
	origin map[runtime.Object]string
	at     string
}

// originOf says where obj was read: its document ("document 3"), with
// its item in a List ("document 3, items[1]"), after its file's name if
// the snapshot is a directory ("b.yaml document 3").
func (o *snapshotObjects) originOf(obj runtime.Object) string { return o.origin[obj] }

// snapshotFiles lists path, or the .yaml, .yml and .json files of the
// directory path, by name.
func snapshotFiles(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		switch filepath.Ext(e.Name()) {
		case ".yaml", ".yml", ".json":
			if !e.IsDir() {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no .yaml, .yml or .json files", path)
	}
	return files, nil
}

// readSnapshot decodes every file, strictly, with client-go's scheme.
func readSnapshot(path string) (*snapshotObjects, error) {
	files, err := snapshotFiles(path)
	if err != nil {
		return nil, err
	}
	dec := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	objs := &snapshotObjects{origin: map[runtime.Object]string{}}
	for _, f := range files {
		label := "" // the snapshot's path names the file
		if f != path {
			label = filepath.Base(f) + " "
		}
		if err := objs.readFile(dec, f, label); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// readFile reads the file at path; label, before "document N", names the
// file in the objects' origins.
func (o *snapshotObjects) readFile(dec runtime.Decoder, path, label string) error {
	f, err := openLimited(path, maxSnapshotFileBytes)
	if err != nil {
		return err
	}
	defer f.Close()
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	docs := 0
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: document %d: %w", path, i, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 || isComment(doc) {
			continue
		}
		docs++
		o.at = fmt.Sprintf("%sdocument %d", label, i)
		if err := o.add(dec, doc, ""); err != nil {
			return fmt.Errorf("%s: document %d: %w", path, i, err)
		}
	}
	if docs == 0 {
		return fmt.Errorf("%s: empty file (want the output of kubectl get nodes,pods -A -o yaml)", path)
	}
	return nil
}

func isComment(doc []byte) bool {
	for line := range strings.SplitSeq(string(doc), "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// add decodes one object; a List's items are decoded in turn. Errors
// name the object (items[i], kind and name) where it can be read.
func (o *snapshotObjects) add(dec runtime.Decoder, data []byte, where string) error {
	obj, gvk, err := dec.Decode(data, nil, nil)
	if err != nil {
		return fmt.Errorf("%s%s", where+describeObject(data), decodeError(err, snapshotWanted, data))
	}
	if x, ok := obj.(*v1.List); ok {
		for i, item := range x.Items {
			if err := o.add(dec, item.Raw, fmt.Sprintf("%sitems[%d]: ", where, i)); err != nil {
				return err
			}
		}
		return nil
	}
	if meta.IsListType(obj) {
		// A typed list (NodeList, PersistentVolumeList...): its items
		// are decoded already.
		items, err := meta.ExtractList(obj)
		if err != nil {
			return fmt.Errorf("%s%s%w", where, describeObject(data), err)
		}
		for i, item := range items {
			if unnamed(item) {
				return fmt.Errorf("%s%sitems[%d]: %s: no metadata.name", where, describeObject(data), i, kindOf(item, gvk.Kind))
			}
			if !o.keep(item, fmt.Sprintf("%sitems[%d]: ", where, i)) {
				kind := gvk.GroupVersion().WithKind(kindOf(item, gvk.Kind))
				return fmt.Errorf("%s%sitems[%d]: %s: %s", where, describeObject(data), i, kind.Kind+" "+itemName(item), notKept(kind))
			}
		}
		return nil
	}
	if unnamed(obj) {
		return fmt.Errorf("%s%sno metadata.name", where, cmpOr(describeObject(data), gvk.Kind+": "))
	}
	if !o.keep(obj, where) {
		return fmt.Errorf("%s%s", where+describeObject(data), notKept(*gvk))
	}
	return nil
}

// itemName is a typed list item's namespace/name, or its name alone
// when it has no namespace.
func itemName(obj runtime.Object) string {
	m, ok := obj.(metav1.Object)
	switch {
	case !ok:
		return ""
	case m.GetNamespace() == "":
		return m.GetName()
	}
	return m.GetNamespace() + "/" + m.GetName()
}

// notKept says why a snapshot does not take an object of kind gvk: its
// kind, or for one of its kinds, the version (DRA's beta, say).
func notKept(gvk schema.GroupVersionKind) string {
	if v, ok := snapshotVersions[gvk.Kind]; ok && gvk.GroupVersion().String() != v {
		return fmt.Sprintf("apiVersion %s: a snapshot takes %s as %s", gvk.GroupVersion(), gvk.Kind, v)
	}
	return fmt.Sprintf("kind %s is not in a snapshot (%s)", gvk.Kind, snapshotKinds)
}

// snapshotVersions is the apiVersion of each kind a snapshot takes.
var snapshotVersions = map[string]string{
	"Node": "v1", "Pod": "v1", "Namespace": "v1", "PersistentVolume": "v1", "PersistentVolumeClaim": "v1",
	"PodDisruptionBudget": "policy/v1", "StorageClass": "storage.k8s.io/v1", "CSINode": "storage.k8s.io/v1",
	"DeviceClass": "resource.k8s.io/v1", "ResourceSlice": "resource.k8s.io/v1",
	"ResourceClaim": "resource.k8s.io/v1", "ResourceClaimTemplate": "resource.k8s.io/v1",
}

// unnamed reports whether obj has no metadata.name, which the API server
// never holds: such a node, pod or object would be keyed by its
// namespace alone.
func unnamed(obj runtime.Object) bool {
	m, ok := obj.(metav1.Object)
	return ok && m.GetName() == ""
}

// kindOf is the kind of a typed list's item: its own, or the list's
// without "List" (the API leaves the items' kind out).
func kindOf(obj runtime.Object, list string) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	return strings.TrimSuffix(list, "List")
}

// keep adds obj to its list, false if it is of no kind a snapshot holds,
// with its origin: the document being read, and where ("items[1]: ", as
// add has it) in it. A namespaced object without a namespace is in
// "default"; DRA's objects get the API server's defaults.
func (o *snapshotObjects) keep(obj runtime.Object, where string) bool {
	at := o.at
	if item := strings.TrimSuffix(strings.ReplaceAll(where, ": ", " "), " "); item != "" {
		at += ", " + item
	}
	o.origin[obj] = at
	switch x := obj.(type) {
	case *v1.Node:
		o.nodes = append(o.nodes, x)
	case *v1.Pod:
		o.pods = append(o.pods, x)
	case *v1.Namespace:
		o.namespaces = append(o.namespaces, x)
	case *policyv1.PodDisruptionBudget:
		o.budgets = append(o.budgets, x)
	default:
		if !isClusterObject(obj) {
			return false
		}
		if m := obj.(metav1.Object); m.GetNamespace() == "" && namespaced(obj) {
			m.SetNamespace("default")
		}
		defaulter.Default(obj)
		o.others = append(o.others, obj)
	}
	return true
}

// namespaced reports whether obj's kind lives in a namespace.
func namespaced(obj runtime.Object) bool {
	switch obj.(type) {
	case *v1.PersistentVolumeClaim, *resourceapi.ResourceClaim, *resourceapi.ResourceClaimTemplate:
		return true
	}
	return false
}

const snapshotKinds = "Node, Pod, Namespace, PodDisruptionBudget, PersistentVolume, PersistentVolumeClaim, StorageClass, CSINode, DeviceClass, ResourceSlice, ResourceClaim, ResourceClaimTemplate, or a List of them"

// describeObject names an object by kind and name ("Pod default/web-0: "),
// as far as its data can be read; "" if not at all.
func describeObject(data []byte) string {
	var m struct {
		Kind     string `yaml:"kind"`
		Metadata struct {
			Name      string `yaml:"name"`
			Namespace string `yaml:"namespace"`
		} `yaml:"metadata"`
	}
	if yaml.Unmarshal(data, &m) != nil || m.Kind == "" && m.Metadata.Name == "" {
		return ""
	}
	name := m.Metadata.Name
	if m.Metadata.Namespace != "" {
		name = m.Metadata.Namespace + "/" + name
	}
	return strings.TrimSpace(cmpOr(m.Kind, "object")+" "+name) + ": "
}

// maxErrorText bounds a decoding error's text: some quote the whole object.
const maxErrorText = 200

// decodeError rewrites the decoder's errors for people: without the
// scheme's Go source location, never longer than maxErrorText, and for a
// quantity that is not one, naming its field in data. want says which
// kinds the file may hold.
func decodeError(err error, want kindsWanted, data []byte) string {
	if strings.Contains(err.Error(), resource.ErrFormatWrong.Error()) {
		if where := badQuantity(data); where != "" {
			return where
		}
	}
	switch {
	case strings.Contains(err.Error(), "json: unsupported value"):
		if where := yamlnum.NonFinite(data); where != "" {
			return where
		}
	case runtime.IsNotRegisteredError(err):
		if msg := otherVersion(want, data); msg != "" {
			return msg
		}
		return "this kind is not " + want.place + " (" + want.kinds + ")"
	case runtime.IsMissingKind(err):
		return "no kind field (want " + want.kinds + ")"
	case runtime.IsMissingVersion(err):
		return "no apiVersion field (want " + want.versions + ")"
	}
	msg, _, _ := strings.Cut(err.Error(), "\n")
	if len(msg) > maxErrorText {
		msg = msg[:maxErrorText] + "…"
	}
	return msg
}

// resourceLists are the fields whose values are quantities by name.
var resourceLists = []string{"allocatable", "capacity", "limits", "overhead", "requests"}

// badQuantity finds, in an object as YAML or JSON, the first quantity of
// a resource list (requests, limits, overhead, capacity, allocatable)
// that does not parse, and names it: "spec.containers[1].resources.
// requests.cpu: \"lots\" is not a quantity". Empty if it finds none.
func badQuantity(data []byte) string {
	var v any
	if yaml.Unmarshal(data, &v) != nil {
		return ""
	}
	return badQuantityIn(v, "")
}

func badQuantityIn(v any, path string) string {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			at := strings.TrimPrefix(path+"."+k, ".")
			if l, ok := x[k].(map[string]any); ok && slices.Contains(resourceLists, k) {
				for _, name := range slices.Sorted(maps.Keys(l)) {
					q := fmt.Sprint(l[name])
					if _, err := resource.ParseQuantity(q); err != nil {
						return fmt.Sprintf("%s.%s: %q is not a quantity", at, name, q)
					}
				}
			}
			if found := badQuantityIn(x[k], at); found != "" {
				return found
			}
		}
	case []any:
		for i, item := range x {
			if found := badQuantityIn(item, fmt.Sprintf("%s[%d]", path, i)); found != "" {
				return found
			}
		}
	}
	return ""
}

// kindsWanted names, for decodeError, the kinds a file may hold: where
// they belong ("in a snapshot"), the kinds, and their apiVersions; what
// takes them ("a snapshot") and the apiVersion of each kind.
type kindsWanted struct {
	place, kinds, versions string
	taker                  string
	versionOf              map[string]string
}

// snapshotWanted is what a snapshot may hold.
var snapshotWanted = kindsWanted{"in a snapshot", snapshotKinds, "v1", "a snapshot", snapshotVersions}

// otherVersion says, for an object of one of want's kinds in an
// apiVersion the scheme does not know, which version want takes it in;
// "" for an object of another kind.
func otherVersion(want kindsWanted, data []byte) string {
	var m struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
	}
	if yaml.Unmarshal(data, &m) != nil {
		return ""
	}
	if v, ok := want.versionOf[m.Kind]; ok && m.APIVersion != v {
		return fmt.Sprintf("apiVersion %s: %s takes %s as %s", m.APIVersion, want.taker, m.Kind, v)
	}
	return ""
}

// checkNode refuses a node whose capacity or allocatable has a negative
// quantity: its room would be less than nothing.
func checkNode(n *v1.Node) error {
	for _, l := range []struct {
		name string
		rl   v1.ResourceList
	}{{"capacity", n.Status.Capacity}, {"allocatable", n.Status.Allocatable}} {
		for _, r := range slices.Sorted(maps.Keys(l.rl)) {
			if q := l.rl[r]; q.Sign() < 0 {
				return fmt.Errorf("node %s: %s %s must not be negative, got %s", n.Name, l.name, r, q.String())
			}
		}
	}
	return nil
}

// checkPod refuses a pod with a negative request, limit or overhead (it
// would give its node room instead of taking it), or a claim entry the
// API server would refuse (checkClaimEntries).
func checkPod(p *v1.Pod) error {
	if err := checkClaimEntries(p); err != nil {
		return err
	}
	check := func(where string, rl v1.ResourceList) error {
		for _, r := range slices.Sorted(maps.Keys(rl)) {
			if q := rl[r]; q.Sign() < 0 {
				return fmt.Errorf("pod %s: %s %s must not be negative, got %s", framework.Key(p), where, r, q.String())
			}
		}
		return nil
	}
	if err := check("spec.overhead", p.Spec.Overhead); err != nil {
		return err
	}
	for _, cs := range []struct {
		field string
		list  []v1.Container
	}{{"initContainers", p.Spec.InitContainers}, {"containers", p.Spec.Containers}} {
		for _, c := range cs.list {
			if err := check(cs.field+" "+c.Name+" requests", c.Resources.Requests); err != nil {
				return err
			}
			if err := check(cs.field+" "+c.Name+" limits", c.Resources.Limits); err != nil {
				return err
			}
		}
	}
	return nil
}

// loadSnapshot starts the cluster from a snapshot: its nodes and the pods
// bound to them now, and its pending pods arriving at the start.
func (s *sim) loadSnapshot(path string) error {
	objs, err := readSnapshot(path)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	sum := &SnapshotSummary{Path: path}
	namespaces := map[string]string{} // where each was read
	for _, ns := range objs.namespaces {
		if at, dup := namespaces[ns.Name]; dup {
			return fmt.Errorf("snapshot %s: namespace %s appears twice: %s and %s", path, ns.Name, at, objs.originOf(ns))
		}
		namespaces[ns.Name] = objs.originOf(ns)
		s.h.Cache.SetNamespace(ns)
		if err := s.namespaceToPlugins(ns); err != nil {
			return fmt.Errorf("snapshot %s: namespace %s: %w", path, ns.Name, err)
		}
		if s.x.namespaces == nil {
			s.x.namespaces = map[string]*v1.Namespace{}
		}
		s.x.namespaces[ns.Name] = ns
	}
	nodes := map[string]string{} // where each was read
	for _, n := range objs.nodes {
		if at, dup := nodes[n.Name]; dup {
			return fmt.Errorf("snapshot %s: node %s appears twice: %s and %s", path, n.Name, at, objs.originOf(n))
		}
		nodes[n.Name] = objs.originOf(n)
		if g := s.sc.nodeGroupOf(n.Name); g != "" {
			return fmt.Errorf("snapshot %s: node %s is also the scenario's (node group %s)", path, n.Name, g)
		}
		if _, dup := s.cl.nodes[n.Name]; dup {
			return fmt.Errorf("snapshot %s: node %s (%s) is also in the scenario", path, n.Name, objs.originOf(n))
		}
		if err := checkNode(n); err != nil {
			return fmt.Errorf("snapshot %s: %w", path, err)
		}
		n.UID = s.cl.nextUID()
		s.cl.nodes[n.Name] = n
		s.cl.nodeGroups[snapshotGroup] = append(s.cl.nodeGroups[snapshotGroup], n.Name)
		s.x.alloc.nodeAdded(s.now, n)
		s.h.AddNode(n)
		sum.Nodes++
	}
	seen := map[string]string{}       // where each pod was read
	uids := map[types.UID]types.UID{} // the snapshot's pod UIDs: the simulator's
	var finished []*v1.Pod
	s.x.snapshotPods = map[types.NamespacedName]bool{}
	for _, p := range objs.pods {
		if p.Namespace == "" {
			p.Namespace = "default"
		}
		key := framework.Key(p).String()
		if at, dup := seen[key]; dup {
			return fmt.Errorf("snapshot %s: pod %s appears twice: %s and %s", path, key, at, objs.originOf(p))
		}
		if g := s.sc.podGroupOf(framework.Key(p)); g != "" {
			return fmt.Errorf("snapshot %s: pod %s is also the scenario's (pod group %s)", path, key, g)
		}
		seen[key] = objs.originOf(p)
		if err := checkPod(p); err != nil {
			return fmt.Errorf("snapshot %s: %w", path, err)
		}
		old := p.UID
		if err := s.snapshotPod(p, sum); err != nil {
			return fmt.Errorf("snapshot %s: %w", path, err)
		}
		if old != "" {
			uids[old] = p.UID
		}
		if p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			finished = append(finished, p)
		}
	}
	budgets := map[string]string{} // where each was read
	for _, b := range objs.budgets {
		key := cmpOr(b.Namespace, "default") + "/" + b.Name
		if at, dup := budgets[key]; dup {
			return fmt.Errorf("snapshot %s: PodDisruptionBudget %s appears twice: %s and %s", path, key, at, objs.originOf(b))
		}
		budgets[key] = objs.originOf(b)
		if err := s.addBudget(b); err != nil {
			return fmt.Errorf("snapshot %s: %w", path, err)
		}
		sum.Budgets++
	}
	if err := s.snapshotObjects(objs.others, objs.originOf, uids, sum); err != nil {
		return fmt.Errorf("snapshot %s: %w", path, err)
	}
	// A finished pod's claims may still be reserved for it, if the
	// resourceclaim controller had not caught up: it frees them as that
	// controller would.
	for _, p := range finished {
		s.releaseClaims(p)
	}
	if s.violation != nil {
		return fmt.Errorf("snapshot %s: %w", path, s.violation)
	}
	s.x.snapshot = sum
	return nil
}

// snapshotObjects creates the snapshot's volumes, claims, classes and
// DRA objects, which only kube-scheduler's plugins read. A claim made for
// a pod, or reserved for one, names the pod by UID: the simulator gives
// pods UIDs of its own, so uids (the snapshot's to the simulator's)
// rewrites them. Before the pending pods arrive, so that their claims
// exist. originOf says where an object was read.
func (s *sim) snapshotObjects(others []runtime.Object, originOf func(runtime.Object) string, uids map[types.UID]types.UID, sum *SnapshotSummary) error {
	if len(others) == 0 {
		return nil
	}
	seen := map[string]string{} // where each was read
	for _, obj := range others {
		key := objectKey(obj)
		if at, dup := seen[key]; dup {
			return fmt.Errorf("%s appears twice: %s and %s", nameObject(obj), at, originOf(obj))
		}
		seen[key] = originOf(obj)
		if s.obj.byKey[key] != nil {
			return fmt.Errorf("%s is also in the scenario's objects", nameObject(obj))
		}
		if c, ok := obj.(*resourceapi.ResourceClaim); ok {
			for i, r := range c.OwnerReferences {
				if u, ok := uids[r.UID]; ok && r.Kind == "Pod" {
					c.OwnerReferences[i].UID = u
				}
			}
			for i, r := range c.Status.ReservedFor {
				if u, ok := uids[r.UID]; ok && r.Resource == "pods" {
					c.Status.ReservedFor[i].UID = u
				}
			}
		}
		if !s.put(obj) {
			return s.violation
		}
		sum.Objects++
	}
	if !s.settleDeletedClaims() {
		return s.violation
	}
	return nil
}

// nameObject names obj as a person would: its kind, then its namespace
// and name, or its name alone for a kind without a namespace
// ("ResourceClaim ml/c", "DeviceClass gpu.example.com").
func nameObject(obj runtime.Object) string {
	m := obj.(metav1.Object)
	kind := reflect.TypeOf(obj).Elem().Name()
	if m.GetNamespace() == "" {
		return kind + " " + m.GetName()
	}
	return kind + " " + m.GetNamespace() + "/" + m.GetName()
}

func (s *sim) snapshotPod(p *v1.Pod, sum *SnapshotSummary) error {
	p.UID = s.cl.nextUID()
	switch {
	case p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed:
		sum.Terminal++
	case p.Spec.NodeName != "":
		if s.cl.nodes[p.Spec.NodeName] == nil {
			return fmt.Errorf("pod %s is bound to node %s, which is not in the snapshot", framework.Key(p), p.Spec.NodeName)
		}
		if s.boundByOther(p) {
			sum.BoundOther++
		}
		sum.Bound++
		s.x.snapshotPods[framework.Key(p)] = true
		s.cl.pods[framework.Key(p)] = p
		s.track(snapshotGroup, p)
		s.x.alloc.podAdded(s.now, p)
		s.h.AddPod(p)
		if p.DeletionTimestamp != nil {
			s.snapshotLeave(p)
		}
	case s.takesOver(p):
		if g := framework.GroupName(p); g != "" {
			return fmt.Errorf("pod %s is pending in PodGroup %s (spec.schedulingGroup), which a snapshot cannot hold: it would never be scheduled", framework.Key(p), g)
		}
		sum.Pending++
		s.x.snapshotPods[framework.Key(p)] = true
		p.Spec.SchedulerName, _ = s.profileOf(p.Spec.SchedulerName)
		s.planned++
		s.at(s.now, func() {
			s.planned--
			s.track(snapshotGroup, p)
			s.arrive(p)
		})
	default:
		sum.LeftAlone++
	}
	return nil
}

// namespaceToPlugins puts namespace ns in the plugins' informers, as a
// cluster's namespace informer holds it: InterPodAffinity lists there the
// namespaces a term's namespaceSelector selects, and reads there the
// labels of a pod's namespace. The scheduler's cache has its own copy
// (Cache.SetNamespace) for the wake budget's affinity match. A profile
// none of whose plugins reads namespaces takes none.
func (s *sim) namespaceToPlugins(ns *v1.Namespace) error {
	if err := s.fw.AddObject(ns); err != nil && !errors.Is(err, profile.ErrUnread) {
		return err
	}
	return nil
}

// snapshotLeave plans bound pod p, which the snapshot caught terminating
// (a preemption's victim, a rollout's old replica), to leave its node
// once its grace period is out, as the kubelet and the API server make
// it leave: deleted, its room freed for the pods waiting for it. The
// snapshot does not say when it was taken, so p leaves after its
// metadata.deletionGracePeriodSeconds, the most it can have had left
// (at once without one). A forecast of the live state knows the instant
// and leaves it when its deletionTimestamp says (forecastRun.graceLeft).
func (s *sim) snapshotLeave(p *v1.Pod) {
	var grace time.Duration
	if g := p.DeletionGracePeriodSeconds; g != nil && *g > 0 {
		grace = time.Duration(*g) * time.Second
	}
	key, uid := framework.Key(p), p.UID
	s.at(s.now.Add(grace), func() {
		if cur := s.cl.pods[key]; cur != nil && cur.UID == uid {
			s.ended(cur, endDeleted)
			delete(s.cl.pods, key)
			s.h.DeletePod(cur)
		}
	})
}

// takesOver reports whether a profile of the simulated scheduler places
// p, a pending pod of the snapshot (profileOf). O(profiles).
func (s *sim) takesOver(p *v1.Pod) bool {
	_, ok := s.profileOf(p.Spec.SchedulerName)
	return ok
}

// boundByOther reports whether p, a bound pod of the snapshot, was
// placed by another scheduler: one not named SchedulerName, or, with
// several profiles, none of theirs either. O(profiles).
func (s *sim) boundByOther(p *v1.Pod) bool {
	name := p.Spec.SchedulerName
	return name != schedulerName && !slices.Contains(s.names, name)
}

// writeSnapshot says what the snapshot held.
func (r *Report) writeSnapshot(p func(string, ...any)) {
	if x := r.Snapshot; x != nil {
		objects := ""
		if x.Objects > 0 {
			objects = fmt.Sprintf("; %d volumes, claims, classes and DRA objects", x.Objects)
		}
		if x.Budgets > 0 {
			objects += fmt.Sprintf("; %d PodDisruptionBudgets", x.Budgets)
		}
		p("snapshot         %s: %d nodes, %d bound pods (%d by other schedulers), %d pending, %d left to other schedulers, %d terminal left out%s",
			x.Path, x.Nodes, x.Bound, x.BoundOther, x.Pending, x.LeftAlone, x.Terminal, objects)
	}
}
