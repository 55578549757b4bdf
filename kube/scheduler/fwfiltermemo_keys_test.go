package scheduler

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	fwframework "k8s.io/kubernetes/pkg/scheduler/framework"
)

// memoAgreesOnEveryNode runs the first half of a lone pod's cycle for p
// (the snapshot, PreFilter, the filter memo of its signature) and, on
// every node, compares the verdict the memo gives (kept for an earlier
// pod of the same key, or filtered and kept now) with the one the filters
// give: its code and message. Nothing is assumed, so the nodes keep
// their generations from pod to pod, and a later pod of the same key
// reads the verdicts an earlier one left.
func memoAgreesOnEveryNode(t *testing.T, f *fixture, p *v1.Pod) {
	t.Helper()
	ctx := context.Background()
	s := f.s
	s.cur = s.profileFor(p)
	s.sig = s.cur.fw.SignPod(ctx, p)
	defer func() { s.sig = nil }()
	if _, _, err := s.cache.updateSnapshot(s.cur.fw.Snapshot()); err != nil {
		t.Fatal(err)
	}
	fw := s.cur.fw.Framework()
	cs := fwframework.NewCycleState()
	if _, st, _ := fw.RunPreFilterPlugins(ctx, cs, p); !st.IsSuccess() {
		t.Fatalf("PreFilter: %v", st)
	}
	all, err := s.cur.fw.Snapshot().NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	memo := s.verdicts(ctx, cs, p, len(all))
	if memo == nil {
		t.Fatal("the filter memo does not serve the cycle")
	}
	for i, ni := range all {
		got, _ := s.filterNode(ctx, cs, p, ni, i, memo)
		want := fw.RunFilterPluginsWithNominatedPods(ctx, cs, p, ni)
		if got.Code() != want.Code() || got.Message() != want.Message() {
			t.Errorf("node %s: memo %v, filters %v", ni.Node().Name, got, want)
		}
	}
}

// TestFilterMemoTellsHostPortsApart: NodePorts checks a pod's host ports
// by address, protocol and number, and only those of its containers and
// sidecars (a plain init container's have ended before the pod runs);
// the framework's signature lists the numbers alone, of every container
// and init container. Pods asking port 8080 over TCP, over UDP, on
// another address, or from a plain init container or a sidecar, have one
// signature but not one verdict on nodes whose pods hold 8080 one way or
// another: on every node the memo answers what the filters answer.
func TestFilterMemoTellsHostPortsApart(t *testing.T) {
	for _, prof := range []struct {
		name   string
		mutate func(*config.KubeSchedulerProfile)
	}{
		{"the default profile", nil},
		// Without default spreading kube-scheduler signs every pod
		// itself: the signature holds the ports' numbers and nothing
		// of the init containers.
		{"no default spreading", noDefaultSpreading},
	} {
		t.Run(prof.name, func(t *testing.T) { hostPortsApart(t, prof.mutate) })
	}
}

// noDefaultSpreading gives PodTopologySpread no default constraints.
func noDefaultSpreading(p *config.KubeSchedulerProfile) {
	for i := range p.PluginConfig {
		if p.PluginConfig[i].Name == "PodTopologySpread" {
			p.PluginConfig[i].Args = &config.PodTopologySpreadArgs{DefaultingType: config.ListDefaulting}
		}
	}
}

func hostPortsApart(t *testing.T, mutate func(*config.KubeSchedulerProfile)) {
	f := newFWFixture(t, nil, mutate)
	held := []struct {
		node string
		port v1.ContainerPort
	}{
		{"udp", v1.ContainerPort{ContainerPort: 80, HostPort: 8080, Protocol: v1.ProtocolUDP}},
		{"tcp-local", v1.ContainerPort{ContainerPort: 80, HostPort: 8080, Protocol: v1.ProtocolTCP, HostIP: "127.0.0.1"}},
		{"free", v1.ContainerPort{}},
		{"tcp", v1.ContainerPort{ContainerPort: 80, HostPort: 8080, Protocol: v1.ProtocolTCP}},
	}
	for _, h := range held {
		f.h.AddNode(zonedNode(h.node, "a"))
		if h.port.HostPort == 0 {
			continue
		}
		b := pod("holder-"+h.node, 100)
		b.Spec.NodeName = h.node
		b.Spec.Containers[0].Ports = []v1.ContainerPort{h.port}
		f.h.AddPod(b)
	}
	port := func(proto v1.Protocol, ip string) v1.ContainerPort {
		return v1.ContainerPort{ContainerPort: 80, HostPort: 8080, Protocol: proto, HostIP: ip}
	}
	always := v1.ContainerRestartPolicyAlways
	for i, tc := range []struct {
		name    string
		port    v1.ContainerPort
		init    bool // the port is an init container's
		restart *v1.ContainerRestartPolicy
	}{
		{name: "TCP 8080 on every address", port: port(v1.ProtocolTCP, "")},
		{name: "UDP 8080", port: port(v1.ProtocolUDP, "")},
		{name: "TCP 8080 on 127.0.0.2", port: port(v1.ProtocolTCP, "127.0.0.2")},
		{name: "TCP 8080 of a plain init container", port: port(v1.ProtocolTCP, ""), init: true},
		{name: "TCP 8080 of a sidecar", port: port(v1.ProtocolTCP, ""), init: true, restart: &always},
		{name: "TCP 8080 on every address again", port: port(v1.ProtocolTCP, "")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod(fmt.Sprint("p", i), 100)
			if tc.init {
				p.Spec.InitContainers = []v1.Container{{Name: "init", RestartPolicy: tc.restart, Ports: []v1.ContainerPort{tc.port}}}
			} else {
				p.Spec.Containers[0].Ports = []v1.ContainerPort{tc.port}
			}
			memoAgreesOnEveryNode(t, f, p)
		})
	}
}
