package profile

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"
	"k8s.io/utils/ptr"
)

const (
	milliName = v1.ResourceName("alibaba.com/gpu-milli")
	devName   = v1.ResourceName("example.com/dev") // a DeviceClass's extendedResourceName
)

// scalarNode is a node of cpu CPUs, room for pods pods and gpu
// thousandths of milliName (none if 0).
func scalarNode(name, cpu, pods string, gpu int64) *v1.Node {
	n := node(name, "z")
	n.Status.Allocatable[v1.ResourceCPU] = resource.MustParse(cpu)
	n.Status.Allocatable[v1.ResourcePods] = resource.MustParse(pods)
	if gpu > 0 {
		n.Status.Allocatable[milliName] = *resource.NewQuantity(gpu, resource.DecimalSI)
	}
	return n
}

// asks makes the pod's first container request l (added to its 100m of CPU).
func asks(l v1.ResourceList) func(*v1.Pod) {
	return func(p *v1.Pod) {
		for k, v := range l {
			p.Spec.Containers[0].Resources.Requests[k] = v
		}
	}
}

func milli(n int64) resource.Quantity { return *resource.NewQuantity(n, resource.DecimalSI) }

// scalarCluster has a node of each kind the check tells apart: none of
// the resource, enough free, too little free, too little in all, too
// little CPU as well, and no room for another pod.
func scalarCluster() Cluster {
	used := pod("used", "part", asks(v1.ResourceList{milliName: milli(1500)}))
	full := pod("full", "full", asks(v1.ResourceList{milliName: milli(1500)}))
	over := pod("over", "over", asks(v1.ResourceList{milliName: milli(1500)}))
	zero := scalarNode("zero", "8", "110", 0)
	zero.Status.Allocatable[milliName] = milli(0) // listed, at 0
	dev := scalarNode("dev", "8", "110", 0)
	dev.Status.Allocatable[devName] = milli(2) // the DeviceClass's resource, as a device plugin's
	return Cluster{
		Nodes: []*v1.Node{scalarNode("cpu-only", "8", "110", 0), scalarNode("free", "8", "110", 2000),
			scalarNode("part", "8", "110", 2000), scalarNode("small", "8", "110", 500),
			scalarNode("tight-cpu", "1", "110", 2000), scalarNode("full", "8", "1", 2000),
			zero, dev, scalarNode("over", "8", "110", 1000)}, // over: its pod asks more than it has
		Pods: []*v1.Pod{used, full, over},
		Objects: []runtime.Object{&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "dev"},
			Spec: resourceapi.DeviceClassSpec{ExtendedResourceName: ptr.To(string(devName))}}},
	}
}

// registryFit builds the default profile's framework over c and, on its
// handle, the registry's NodeResourcesFit with args.
func registryFit(t *testing.T, c Cluster, args *config.NodeResourcesFitArgs) (any, *Framework) {
	t.Helper()
	f := defaultFramework(t, c)
	return registryPlugin(t, f, noderesources.Name, args), f
}

// registryScalarFit returns the registry's NodeResourcesFit on scalarCluster with
// the default args, which must be a *fitScalar, and the snapshot's nodes.
func registryScalarFit(t *testing.T) (*fitScalar, []fwk.NodeInfo) {
	t.Helper()
	pl, f := registryFit(t, scalarCluster(), defaultFitArgs(t))
	fs, ok := pl.(*fitScalar)
	if !ok {
		t.Fatalf("the registry's NodeResourcesFit is a %T, want a *fitScalar", pl)
	}
	nodes, err := f.Snapshot().NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	return fs, nodes
}

func defaultFitArgs(t *testing.T) *config.NodeResourcesFitArgs {
	t.Helper()
	cfg, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, pc := range cfg.Profiles[0].PluginConfig {
		if a, ok := pc.Args.(*config.NodeResourcesFitArgs); ok {
			return a.DeepCopy()
		}
	}
	t.Fatal("no NodeResourcesFit args in the default profile")
	return nil
}

// TestFitScalarAnswersAsUpstream: for each pod, on every node, the
// registry's NodeResourcesFit answers with upstream's code and reasons
// (in upstream's order); the pods of one extended resource take the
// once-per-cycle check, the others go to upstream unchanged.
func TestFitScalarAnswersAsUpstream(t *testing.T) {
	ctx := context.Background()
	fs, nodes := registryScalarFit(t)
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		fast bool
	}{
		{"a share and CPU", pod("p", "", asks(v1.ResourceList{milliName: milli(1000), v1.ResourceCPU: resource.MustParse("2")})), true},
		{"GPUs alone", pod("p", "", func(p *v1.Pod) { p.Spec.Containers[0].Resources.Requests = v1.ResourceList{milliName: milli(3000)} }), true},
		{"a small share", pod("p", "", asks(v1.ResourceList{milliName: milli(400)})), true},
		{"zero of it", pod("p", "", asks(v1.ResourceList{milliName: milli(0)})), true},
		{"init container larger", pod("p", "", asks(v1.ResourceList{milliName: milli(300)}), func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "i", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{milliName: milli(600)}}}}
		}), true},
		{"overhead", pod("p", "", asks(v1.ResourceList{milliName: milli(400)}), func(p *v1.Pod) {
			p.Spec.Overhead = v1.ResourceList{milliName: milli(200), v1.ResourceCPU: resource.MustParse("7")}
		}), true},
		{"a DeviceClass's resource", pod("p", "", asks(v1.ResourceList{devName: milli(1)})), true},
		{"a DeviceClass's resource, more than a node has", pod("p", "", asks(v1.ResourceList{devName: milli(3)})), true},
		{"sidecar and init container", pod("p", "", asks(v1.ResourceList{milliName: milli(300)}), func(p *v1.Pod) {
			always := v1.ContainerRestartPolicyAlways
			p.Spec.InitContainers = []v1.Container{
				{Name: "side", RestartPolicy: &always, Resources: v1.ResourceRequirements{Requests: v1.ResourceList{milliName: milli(400)}}},
				{Name: "i", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{milliName: milli(900)}}}}
		}), true},
		{"sidecar alone", pod("p", "", asks(v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}), func(p *v1.Pod) {
			always := v1.ContainerRestartPolicyAlways
			p.Spec.InitContainers = []v1.Container{
				{Name: "side", RestartPolicy: &always, Resources: v1.ResourceRequirements{Requests: v1.ResourceList{milliName: milli(1800)}}}}
		}), true},
		{"pending resize in status", pod("p", "", asks(v1.ResourceList{milliName: milli(400)}), func(p *v1.Pod) {
			p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "c", Resources: &v1.ResourceRequirements{
				Requests: v1.ResourceList{milliName: milli(1900), v1.ResourceCPU: resource.MustParse("100m")}}}}
		}), true},
		{"nominated elsewhere", pod("p", "", asks(v1.ResourceList{milliName: milli(600)}), func(p *v1.Pod) {
			p.Status.NominatedNodeName = "part"
		}), true},
		{"negative (refused by the API server)", pod("p", "", asks(v1.ResourceList{milliName: milli(-5)})), true},
		{"no extended resource", pod("p", "", asks(v1.ResourceList{v1.ResourceCPU: resource.MustParse("4")})), false},
		{"two extended resources", pod("p", "", asks(v1.ResourceList{milliName: milli(1000), "example.com/x": milli(1)})), false},
		{"hugepages besides", pod("p", "", asks(v1.ResourceList{milliName: milli(1000), "hugepages-2Mi": resource.MustParse("2Mi")})), false},
		{"a node already", pod("p", "part", asks(v1.ResourceList{milliName: milli(1000)})), false},
		{"pod-level resources", pod("p", "", asks(v1.ResourceList{milliName: milli(1000)}), func(p *v1.Pod) {
			p.Spec.Resources = &v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}
		}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ours, up := framework.NewCycleState(), framework.NewCycleState()
			ours.Write(scalarAskKey, &scalarAsk{name: "stale", n: 1}) // a key left by an earlier cycle
			if _, st := fs.PreFilter(ctx, ours, tc.pod, nil); !st.IsSuccess() {
				t.Fatalf("PreFilter: %v", st)
			}
			if _, st := fs.Fit.PreFilter(ctx, up, tc.pod, nil); !st.IsSuccess() {
				t.Fatalf("upstream's PreFilter: %v", st)
			}
			if _, err := ours.Read(scalarAskKey); (err == nil) != tc.fast {
				t.Errorf("checked once per cycle: %v, want %v", err == nil, tc.fast)
			}
			refused := 0
			for _, ni := range nodes {
				got, want := fs.Filter(ctx, ours, tc.pod, ni), fs.Fit.Filter(ctx, up, tc.pod, ni)
				g, w := reasonsOf(got), reasonsOf(want)
				if !tc.fast { // two scalars: upstream's own order is a map's
					g, w = slices.Sorted(slices.Values(g)), slices.Sorted(slices.Values(w))
				}
				if got.Code() != want.Code() || !slices.Equal(g, w) {
					t.Errorf("node %s: %v %q, upstream %v %q", ni.Node().Name, got.Code(), reasonsOf(got), want.Code(), reasonsOf(want))
				}
				if !want.IsSuccess() {
					refused++
				}
			}
			if tc.name == "a share and CPU" && refused != 8 {
				t.Errorf("upstream refused %d nodes, want 8 (all but free): the cluster no longer tells the cases apart", refused)
			}
		})
	}
}

// reasonsOf is st's reasons; none for nil.
func reasonsOf(st *fwk.Status) []string {
	if st == nil {
		return nil
	}
	return st.Reasons()
}

// TestFitScalarStandsAsideForIgnoredResources: a profile whose
// NodeResourcesFit ignores extended resources by name or group gets
// upstream's plugin itself.
func TestFitScalarStandsAsideForIgnoredResources(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*config.NodeResourcesFitArgs)
	}{
		{"by name", func(a *config.NodeResourcesFitArgs) { a.IgnoredResources = []string{string(milliName)} }},
		{"by group", func(a *config.NodeResourcesFitArgs) { a.IgnoredResourceGroups = []string{"alibaba.com"} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := defaultFitArgs(t)
			tc.mutate(args)
			pl, _ := registryFit(t, scalarCluster(), args)
			if _, ok := pl.(*noderesources.Fit); !ok {
				t.Errorf("the registry's NodeResourcesFit is a %T, want upstream's *noderesources.Fit", pl)
			}
		})
	}
}

// TestFitScalarCountsNominatedPods: on a node with a nominated pod added
// to its NodeInfo, as preemption's dry runs and
// RunFilterPluginsWithNominatedPods add one (NodeResourcesFit has no
// PreFilterExtensions), the registry's NodeResourcesFit answers as
// upstream's, counting what the nominated pod asks.
func TestFitScalarCountsNominatedPods(t *testing.T) {
	ctx := context.Background()
	fs, nodes := registryScalarFit(t)
	p := pod("p", "", asks(v1.ResourceList{milliName: milli(1000)}))
	ours, up := framework.NewCycleState(), framework.NewCycleState()
	fs.PreFilter(ctx, ours, p, nil)
	fs.Fit.PreFilter(ctx, up, p, nil)
	refused := 0
	for _, ni := range nodes {
		nominated, err := framework.NewPodInfo(pod("nom", "", asks(v1.ResourceList{milliName: milli(1500)})))
		if err != nil {
			t.Fatal(err)
		}
		with := ni.Snapshot()
		with.AddPodInfo(nominated)
		got, want := fs.Filter(ctx, ours, p, with), fs.Fit.Filter(ctx, up, p, with)
		if got.Code() != want.Code() || !slices.Equal(reasonsOf(got), reasonsOf(want)) {
			t.Errorf("node %s: %v %q, upstream %v %q", ni.Node().Name, got.Code(), reasonsOf(got), want.Code(), reasonsOf(want))
		}
		if ni.Node().Name == "free" && want.IsSuccess() {
			t.Error("upstream fits the pod on free beside the nominated pod: the case no longer tests it")
		}
		if !want.IsSuccess() {
			refused++
		}
	}
	if refused != len(nodes) {
		t.Errorf("upstream refused %d of %d nodes with the nominated pod, want all", refused, len(nodes))
	}
}

// TestOneExtendedSkipsSumOnlyForBasicRequests: oneExtended answers as
// summing the pod's requests does, whether its one extended resource is
// asked by a container, an init container, a sidecar or the overhead,
// and whether the pod's requests name only CPU, memory and ephemeral
// storage (the case it answers without summing) or more.
func TestOneExtendedSkipsSumOnlyForBasicRequests(t *testing.T) {
	init := func(c v1.Container) func(*v1.Pod) {
		return func(p *v1.Pod) { p.Spec.InitContainers = append(p.Spec.InitContainers, c) }
	}
	ctr := func(l v1.ResourceList) v1.Container {
		return v1.Container{Name: "i", Resources: v1.ResourceRequirements{Requests: l}}
	}
	sidecar := ctr(v1.ResourceList{milliName: milli(300)})
	sidecar.RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)
	basic := v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi"), v1.ResourceEphemeralStorage: resource.MustParse("1Gi")}
	cases := []struct {
		name  string
		pod   *v1.Pod
		basic bool // answered without summing
		want  int64
	}{
		{"cpu only", pod("p", ""), true, -1},
		{"cpu, memory, storage everywhere", pod("p", "", asks(basic), init(ctr(basic)), func(p *v1.Pod) { p.Spec.Overhead = basic }), true, -1},
		{"no requests", pod("p", "", func(p *v1.Pod) { p.Spec.Containers[0].Resources.Requests = nil }), true, -1},
		{"a container's", pod("p", "", asks(v1.ResourceList{milliName: milli(500)})), false, 500},
		{"an init container's", pod("p", "", init(ctr(v1.ResourceList{milliName: milli(700)}))), false, 700},
		{"a sidecar's beside a container's", pod("p", "", asks(v1.ResourceList{milliName: milli(500)}), init(sidecar)), false, 800},
		{"the overhead's", pod("p", "", func(p *v1.Pod) { p.Spec.Overhead = v1.ResourceList{milliName: milli(50)} }), false, 50},
		{"two extended", pod("p", "", asks(v1.ResourceList{milliName: milli(500), devName: milli(1)})), false, -1},
		{"pods, not extended", pod("p", "", asks(v1.ResourceList{v1.ResourcePods: milli(1)})), false, -1},
		{"hugepages, not extended", pod("p", "", asks(v1.ResourceList{"hugepages-2Mi": resource.MustParse("2Mi")})), false, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := basicRequests(c.pod); got != c.basic {
				t.Errorf("basicRequests %v, want %v", got, c.basic)
			}
			ask, ok := oneExtended(c.pod)
			got := int64(-1)
			if ok {
				got = ask.n
			}
			if got != c.want || ok != (c.want >= 0) {
				t.Errorf("oneExtended %d (%v), want %d", got, ok, c.want)
			}
		})
	}
}

// TestFitScalarReasonMadeOnce: the reason of the nodes without room for
// the pod's extended resource is one string, the same address on every
// node and in every cycle (the scheduler's verdicts keep nodes'
// statuses from cycle to cycle, and noteRejections compares their
// reasons by address), and no string is made per node.
func TestFitScalarReasonMadeOnce(t *testing.T) {
	ctx := context.Background()
	fs, nodes := registryScalarFit(t)
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
	}{
		{"GPUs alone", pod("p", "", func(p *v1.Pod) { p.Spec.Containers[0].Resources.Requests = v1.ResourceList{milliName: milli(3000)} })},
		{"a share and CPU", pod("p", "", asks(v1.ResourceList{milliName: milli(1000), v1.ResourceCPU: resource.MustParse("2")}))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var addrs []*byte
			for range 2 { // two cycles
				cs := framework.NewCycleState()
				if _, st := fs.PreFilter(ctx, cs, tc.pod, nil); !st.IsSuccess() {
					t.Fatalf("PreFilter: %v", st)
				}
				for _, ni := range nodes {
					for _, r := range reasonsOf(fs.Filter(ctx, cs, tc.pod, ni)) {
						if r == "Insufficient "+string(milliName) {
							addrs = append(addrs, unsafe.StringData(r))
						}
					}
				}
			}
			if len(addrs) < 4 {
				t.Fatalf("%d nodes refused for %s, want at least 2: the cluster no longer tells the case", len(addrs), milliName)
			}
			for _, a := range addrs[1:] {
				if a != addrs[0] {
					t.Fatalf("the nodes' reasons are strings of %d addresses, want one", len(slices.Compact(addrs)))
				}
			}
		})
	}
}

// TestFitScalarReasonsBounded: the reason strings fitScalar keeps by
// resource name are bounded (a pod may ask for any extended resource,
// one no node has, and the scheduler lives long): past
// fitScalarReasonsMax names, a name's reason is made per cycle and not
// kept, and it reads the same; a name kept keeps its one string.
func TestFitScalarReasonsBounded(t *testing.T) {
	ctx := context.Background()
	fs, _ := registryScalarFit(t)
	reasonOf := func(name v1.ResourceName) string {
		t.Helper()
		p := pod("p", "", asks(v1.ResourceList{name: resource.MustParse("1")}))
		cs := framework.NewCycleState()
		if _, st := fs.PreFilter(ctx, cs, p, nil); !st.IsSuccess() {
			t.Fatalf("PreFilter: %v", st)
		}
		d, err := cs.Read(scalarAskKey)
		if err != nil {
			t.Fatalf("no scalar ask for %s: %v", name, err)
		}
		return d.(*scalarAsk).insufficient
	}
	first := reasonOf("example.com/r0")
	for i := range fitScalarReasonsMax + 36 {
		name := v1.ResourceName(fmt.Sprintf("example.com/r%d", i))
		if got, want := reasonOf(name), "Insufficient "+string(name); got != want {
			t.Fatalf("reason for %s: %q, want %q", name, got, want)
		}
	}
	fs.whyMu.Lock()
	kept := len(fs.why)
	fs.whyMu.Unlock()
	if kept > fitScalarReasonsMax {
		t.Errorf("%d reason strings kept after %d names, want at most %d", kept, fitScalarReasonsMax+36, fitScalarReasonsMax)
	}
	if again := reasonOf("example.com/r0"); unsafe.StringData(again) != unsafe.StringData(first) {
		t.Error("a kept name's reason is another string than at its first cycle")
	}
}
