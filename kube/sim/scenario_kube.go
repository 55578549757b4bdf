package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	resourcedefaults "k8s.io/kubernetes/pkg/apis/resource/v1"

	"github.com/schedq/schedq/kube/clusterevent"
)

// kubeDecoder is a scenario value written as Kubernetes writes it (a
// manifest's fields), decoded strictly: checkFields calls decodeKube to
// report a bad one at its path.
type kubeDecoder interface {
	decodeKube(n *yaml.Node) error
}

// Kube is a value of a Kubernetes API type (T) written in a scenario as
// in a manifest: pods[].topologySpreadConstraints,
// pods[].nodeAffinity. Unknown fields are errors.
type Kube[T any] struct {
	v   T
	set bool
}

// UnmarshalYAML decodes the value strictly, through its JSON form.
func (k *Kube[T]) UnmarshalYAML(n *yaml.Node) error { return k.decodeKube(n) }

func (k *Kube[T]) decodeKube(n *yaml.Node) error {
	b, err := yamlToJSON(n)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var v T
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "json: "))
	}
	k.v, k.set = v, true
	return nil
}

func yamlToJSON(n *yaml.Node) ([]byte, error) {
	var raw any
	if err := n.Decode(&raw); err != nil {
		return nil, err
	}
	return json.Marshal(raw)
}

// Object is a Kubernetes object written in a scenario as in a manifest,
// with apiVersion and kind: a PersistentVolume, PersistentVolumeClaim,
// StorageClass, CSINode, or DRA's DeviceClass, ResourceSlice,
// ResourceClaim or ResourceClaimTemplate (objects[], events[].createObjects,
// events[].deleteObjects). It is decoded strictly, with client-go's
// scheme.
type Object struct{ obj runtime.Object }

var strictDecoder = serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()

// defaulter sets the defaults the API server sets on DRA's objects (a
// request's allocationMode ExactCount and count 1, a taint's time): the
// allocator refuses a request without them.
var defaulter = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := resourcedefaults.RegisterDefaults(s); err != nil {
		panic(err)
	}
	return s
}()

// UnmarshalYAML decodes the object.
func (o *Object) UnmarshalYAML(n *yaml.Node) error { return o.decodeKube(n) }

func (o *Object) decodeKube(n *yaml.Node) error {
	b, err := yamlToJSON(n)
	if err != nil {
		return err
	}
	obj, _, err := strictDecoder.Decode(b, nil, nil)
	if err != nil {
		return err
	}
	defaulter.Default(obj)
	if !isClusterObject(obj) {
		gvk := obj.GetObjectKind().GroupVersionKind()
		if v, ok := snapshotVersions[gvk.Kind]; ok && gvk.GroupVersion().String() != v {
			return fmt.Errorf("apiVersion %s: the simulator takes %s as %s", gvk.GroupVersion(), gvk.Kind, v)
		}
		return fmt.Errorf("kind %s: the simulator takes %s", gvk.Kind, objectKinds)
	}
	if m := obj.(metav1.Object); m.GetNamespace() == "" && namespaced(obj) {
		m.SetNamespace("default")
	}
	o.obj = obj
	return nil
}

// isClusterObject reports whether obj is of one of objectKinds: what only
// kube-scheduler's plugins read, besides nodes, pods and namespaces.
func isClusterObject(obj runtime.Object) bool {
	switch obj.(type) {
	case *v1.PersistentVolume, *v1.PersistentVolumeClaim, *storagev1.StorageClass, *storagev1.CSINode,
		*resourceapi.DeviceClass, *resourceapi.ResourceSlice, *resourceapi.ResourceClaim, *resourceapi.ResourceClaimTemplate:
		return true
	}
	return false
}

// objectKinds are the kinds an Object may be.
const objectKinds = "PersistentVolume, PersistentVolumeClaim, StorageClass, CSINode, DeviceClass, ResourceSlice, ResourceClaim and ResourceClaimTemplate"

// resource is the cluster event resource of the object's kind.
func (o Object) resource() string { return eventResource(o.obj) }

// eventResource is the cluster event resource of obj's kind, "" for a
// ResourceClaimTemplate, which no plugin reads (the simulator plays the
// resourceclaim controller that does).
func eventResource(obj runtime.Object) string {
	switch obj.(type) {
	case *v1.PersistentVolume:
		return clusterevent.PersistentVolume
	case *v1.PersistentVolumeClaim:
		return clusterevent.PersistentVolumeClaim
	case *storagev1.StorageClass:
		return clusterevent.StorageClass
	case *resourceapi.DeviceClass:
		return clusterevent.DeviceClass
	case *resourceapi.ResourceSlice:
		return clusterevent.ResourceSlice
	case *resourceapi.ResourceClaim:
		return clusterevent.ResourceClaim
	case *resourceapi.ResourceClaimTemplate:
		return ""
	default:
		return clusterevent.CSINode
	}
}

// key names the object: kind/namespace/name.
func (o Object) key() string { return objectKey(o.obj) }

// objectKey names obj: kind/namespace/name.
func objectKey(obj runtime.Object) string {
	m := obj.(metav1.Object)
	return fmt.Sprintf("%T/%s/%s", obj, m.GetNamespace(), m.GetName())
}

// describe names the object: its kind, namespace and name.
func (o Object) describe() string {
	m := o.meta()
	return strings.TrimSpace(o.obj.GetObjectKind().GroupVersionKind().Kind + " " + strings.TrimPrefix(m.GetNamespace()+"/"+m.GetName(), "/"))
}

func (o Object) meta() interface {
	GetName() string
	GetNamespace() string
} {
	return o.obj.(interface {
		GetName() string
		GetNamespace() string
	})
}

// validate checks what the simulator needs of an object: a name, and a
// claim that names its volume (no volume controller or provisioner runs,
// so a claim is bound from the start).
func (o Object) validate(f string, bad func(string, string, ...any)) {
	if o.obj == nil {
		return
	}
	if o.meta().GetName() == "" {
		bad(f+".metadata.name", "must not be empty")
	}
	if pvc, ok := o.obj.(*v1.PersistentVolumeClaim); ok && pvc.Spec.VolumeName == "" {
		bad(f+".spec.volumeName", "must name the claim's volume: the simulator runs no volume controller or provisioner, so a claim is bound to its volume from the start")
	}
}

// validateUpstream checks the fields only kube-scheduler's plugins read.
func (g *PodGroup) validateUpstream(f string, bad func(string, string, ...any)) {
	for i, c := range g.TopologySpreadConstraints.v {
		p := fmt.Sprintf("%s.topologySpreadConstraints[%d]", f, i)
		if c.MaxSkew < 1 {
			bad(p+".maxSkew", "must be at least 1, got %d", c.MaxSkew)
		}
		if c.TopologyKey == "" {
			bad(p+".topologyKey", "must not be empty (for example %s)", zoneLabel)
		}
		switch c.WhenUnsatisfiable {
		case v1.DoNotSchedule, v1.ScheduleAnyway:
		default:
			bad(p+".whenUnsatisfiable", "%q is not DoNotSchedule or ScheduleAnyway", c.WhenUnsatisfiable)
		}
		if _, err := metav1.LabelSelectorAsSelector(c.LabelSelector); err != nil {
			bad(p+".labelSelector", "%v", err)
		}
	}
	g.validateNodeAffinity(f+".nodeAffinity", bad)
	for i, port := range g.HostPorts {
		if port < 1 || port > 65535 {
			bad(fmt.Sprintf("%s.hostPorts[%d]", f, i), "must be 1 to 65535, got %d", port)
		}
	}
	for i, c := range g.Claims {
		if c == "" {
			bad(fmt.Sprintf("%s.claims[%d]", f, i), "must not be empty")
		}
	}
	for i, c := range g.ResourceClaims.v {
		p := fmt.Sprintf("%s.resourceClaims[%d]", f, i)
		if c.Name == "" {
			bad(p+".name", "must not be empty")
		}
		if (c.ResourceClaimName == nil) == (c.ResourceClaimTemplateName == nil) {
			bad(p, "needs exactly one of resourceClaimName and resourceClaimTemplateName")
		}
	}
}

// validateNodeAffinity refuses node selector terms that kube-scheduler's
// plugins cannot read (an unknown operator, an invalid key or value),
// with the path of the bad field.
func (g *PodGroup) validateNodeAffinity(f string, bad func(string, string, ...any)) {
	if !g.NodeAffinity.set {
		return
	}
	na := g.NodeAffinity.v
	if r := na.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
		if _, err := nodeaffinity.NewNodeSelector(r); err != nil {
			bad(f+".requiredDuringSchedulingIgnoredDuringExecution", "%v", err)
		}
	}
	if _, err := nodeaffinity.NewPreferredSchedulingTerms(na.PreferredDuringSchedulingIgnoredDuringExecution); err != nil {
		bad(f+".preferredDuringSchedulingIgnoredDuringExecution", "%v", err)
	}
}

// upstreamFields sets on pod i of g the fields only kube-scheduler's
// plugins read. The constraints are shared by the group's pods
// (read-only, as every object of the simulator).
func upstreamFields(g *PodGroup, i int, p *v1.Pod) {
	p.Spec.TopologySpreadConstraints = g.TopologySpreadConstraints.v
	if g.NodeAffinity.set {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &v1.Affinity{}
		}
		p.Spec.Affinity.NodeAffinity = &g.NodeAffinity.v
	}
	for _, port := range g.HostPorts {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, v1.ContainerPort{ContainerPort: port, HostPort: port, Protocol: v1.ProtocolTCP})
	}
	for j, c := range g.Claims {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: fmt.Sprintf("claim-%d", j), VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: strings.ReplaceAll(c, "{i}", strconv.Itoa(i))}}})
	}
	for _, c := range g.ResourceClaims.v {
		if c.ResourceClaimName != nil {
			name := strings.ReplaceAll(*c.ResourceClaimName, "{i}", strconv.Itoa(i))
			c.ResourceClaimName = &name
		}
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, c)
		p.Spec.Containers[0].Resources.Claims = append(p.Spec.Containers[0].Resources.Claims, v1.ResourceClaim{Name: c.Name})
	}
}
