package scheduler

import (
	"context"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedutil "k8s.io/kubernetes/pkg/scheduler/util"

	"github.com/schedq/schedq/kube/profile"
)

// nodeLocalFilters are the filter plugins whose verdict on a node depends
// only on the pod and on that node's NodeInfo (its node object and the
// pods on it): none of them reads other nodes, the cluster's objects or a
// lister.
var nodeLocalFilters = map[string]bool{
	"NodeUnschedulable": true,
	"NodeName":          true,
	"TaintToleration":   true,
	"NodeAffinity":      true,
	"NodePorts":         true,
	nodeResourcesFit:    true,
}

// filterMemoVerdicts bounds the verdicts kept (filterMemoSigsFor), about
// 70 bytes each.
const filterMemoVerdicts = 1 << 19

// filterMemoSigsFor is how many signatures' verdicts are kept on a
// cluster of n nodes: as many as filterMemoVerdicts allows, at least 16
// and at most 256. A trace's GPU pods come in some 35 kinds, each in
// turn, and each cycle examines a part of the nodes from where the last
// stopped: with fewer signatures kept than kinds come, the verdicts of
// a kind were dropped before it came again. O(1).
func filterMemoSigsFor(n int) int {
	return min(max(filterMemoVerdicts/max(n, 1), 16), 256)
}

// filterMemo keeps the framework's filter verdicts per pod signature
// (with the host ports NodePorts checks: hostPortsKey) and node, each with the generation of the NodeInfo it was given for: a node
// whose generation has not changed since has the same pods and object, so
// a pod of that signature gets the same verdict there. kube-scheduler's
// cache gives every change of a node a new generation, unique in the
// process, so a (node, generation) pair names one content.
//
// A forecast's pods mostly wait on a full cluster: each end of a running
// pod frees room on one node, and the pod that takes it would otherwise
// filter every node to find that one. With the memo it filters the nodes
// that changed, and reads the others' verdicts.
//
// It is used only when every filter that runs for the pod is node-local
// (nodeLocalFilters; the others skipped by their PreFilter), the pod
// requests no extended resource (requestsExtended), no pod is
// nominated anywhere (the nominated pods would join the filters), in a
// lone pod's cycle whose pod has a signature (never a group attempt, which
// assumes pods in the snapshot without changing their nodes' generation),
// so the verdicts, statuses and the order in which nodes are examined are
// the ones a full filtering gives. Used only by the scheduling loop.
//
// DynamicResources is not node-local: its answer also reads the node's
// ResourceSlices and what is allocated of their devices. Where the DRA
// manager counts the changes of each pool (the simulator's:
// profile.DRAFilterKey), a pod with claims, or extended resources,
// is memoised all the same: its key is its signature without its claims
// (profile.SignWithoutClaims) and what it asks of DRA, and each verdict
// is kept with the node's profile.DRAStamp besides its generation.
type filterMemo struct {
	sigs map[string]*sigMemo
	// draFront keeps what the DRAStamps of its pods' cycles read of each
	// node, by the node's place (profile.DRAStampFront).
	draFront profile.DRAStampFront
}

// sigMemo is the memo of one signature: each node's verdict, and the
// outcome of the last cycle that found no node, with the count of
// verdicts written when it was made. While no verdict has been written
// since and every node still has its verdict, a cycle would examine every
// node and get those verdicts again: the same diagnosis and outcome.
type sigMemo struct {
	nodes map[string]memoVerdict
	// at is a front of nodes by the node's place in the list a cycle
	// filters (the snapshot's, which keeps its order and its NodeInfo
	// objects while no node comes or goes): at[i] is the verdict last
	// written or read for the NodeInfo ni at place i. A verdict is a
	// function of its (generation, stamp) pair whatever place it was
	// read at, so a stale place only misses (and falls back to nodes):
	// the front saves hashing the node's name (and reading it from the
	// node object) in each node visit.
	at     []placedVerdict
	writes uint64
	fail   *memoFailure
	// statuses are the distinct rejections kept (intern), at most
	// internStatuses.
	statuses []*fwk.Status
	// dra: DynamicResources filters the pod, and each verdict holds the
	// node's DRAStamp, which stamper gives in the cycle that verdicts
	// returned the memo for (until endCycle), with front its profile's
	// places of what the stamps read of the nodes.
	dra     bool
	stamper profile.DRAStamper
	front   *profile.DRAStampFront
}

type memoFailure struct {
	writes        uint64
	nodes, numAll int
	// newest is the highest generation of the nodes the cycle examined.
	// kube-scheduler takes every node's generation from one counter of
	// the process, so a node that changed, or one that came, has a newer
	// one: while the whole cluster (as many nodes as then) has none newer,
	// no node changed.
	newest int64
	out    Outcome
}

// memoVerdict is one node's verdict: nil status for a node that fits.
// code is st's code, read without st (a memo hit would otherwise load
// each node's status object, scattered in memory, only to see that it
// rejects).
type memoVerdict struct {
	gen  int64
	dra  profile.DRAStamp // the zero stamp unless sigMemo.dra
	st   *fwk.Status
	code fwk.Code
}

// placedVerdict is sigMemo.at's entry: the NodeInfo object a verdict was
// kept for at that place (holding it keeps its address from being
// reused for another node's).
type placedVerdict struct {
	ni fwk.NodeInfo
	v  memoVerdict
}

// verdicts returns the memo of the cycle's signature if the cycle may use
// it, nil if not (numAll: the cluster's nodes). O(filter plugins), and
// SignPod's cost for a pod that DynamicResources filters.
func (s *Scheduler) verdicts(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, numAll int) *sigMemo {
	if s.noFilterMemo || s.inTrial || len(s.fwNom.pods) > 0 {
		return nil
	}
	skip := cs.GetSkipFilterPlugins()
	draKey, dra := "", false
	for _, name := range s.filterPlugins() {
		if nodeLocalFilters[name] || skip.Has(name) {
			continue
		}
		if name != dynamicResources {
			return nil
		}
		if draKey, dra = profile.DRAFilterKey(cs); !dra {
			return nil
		}
	}
	key := string(s.sig)
	switch {
	case dra:
		sig := s.cur.fw.SignWithoutClaims(ctx, pod)
		if sig == nil {
			return nil
		}
		key = string(sig) + "\x00" + draKey
	case s.sig == nil || requestsExtended(pod):
		return nil
	}
	// The signature lists the numbers of the host ports of every
	// container and init container; NodePorts checks those of the
	// containers and sidecars, each on its address and protocol.
	if ports := hostPortsKey(pod); ports != "" {
		key += "\x01" + ports
	}
	m := &s.cur.fmemo
	if m.sigs == nil {
		m.sigs = map[string]*sigMemo{}
	}
	v, ok := m.sigs[key]
	if !ok {
		if len(m.sigs) >= filterMemoSigsFor(numAll) {
			clear(m.sigs)
		}
		v = &sigMemo{nodes: map[string]memoVerdict{}, dra: dra}
		m.sigs[key] = v
	}
	if dra {
		v.stamper, _ = profile.DRAStamperOf(cs)
		v.front = &m.draFront
	}
	return v
}

// hostPortsKey is what NodePorts reads of pod: the host ports it
// checks (those of its containers and sidecars, not of its plain init
// containers, which have ended when the pod runs), each with its address
// and protocol, in the pod's order; "" for none. The framework's
// signature lists only the ports' numbers, of every container and init
// container, so that a pod asking 8080 over UDP, or from a sidecar, has
// the signature of one asking it over TCP, or from a plain init
// container, and not its verdicts on a node whose pods hold 8080.
// O(containers x ports).
func hostPortsKey(pod *v1.Pod) string {
	var b []byte
	for _, p := range schedutil.GetHostPorts(pod) {
		b = append(append(b, p.HostIP...), ' ')
		b = append(append(b, p.Protocol...), ' ')
		b = append(strconv.AppendInt(b, int64(p.HostPort), 10), ',')
	}
	return string(b)
}

// requestsExtended reports whether pod requests an extended resource
// (a name with a domain other than kubernetes.io), or a DeviceClass's
// devices by the class's implicit name (deviceclass.resource.kubernetes.io/
// and the class's name, which every class serves): NodeResourcesFit may
// then leave it to DRA's devices (resource slices, device classes), which
// no node's generation follows, unless the node's DRAStamp is kept too.
// O(containers x resources).
func requestsExtended(pod *v1.Pod) bool {
	lists := []v1.ResourceList{pod.Spec.Overhead}
	if pod.Spec.Resources != nil {
		lists = append(lists, pod.Spec.Resources.Requests, pod.Spec.Resources.Limits)
	}
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			lists = append(lists, cs[i].Resources.Requests, cs[i].Resources.Limits)
		}
	}
	for _, l := range lists {
		for name := range l {
			n := string(name)
			if strings.HasPrefix(n, resourceapi.ResourceDeviceClassPrefix) || strings.Contains(n, "/") && !strings.Contains(n, "kubernetes.io/") {
				return true
			}
		}
	}
	return false
}

// filterNode runs the filters, with the nominated pods, on ni, or reads
// its verdict from memo (nil: no memo) if ni has not changed since; a
// verdict that is not an error is kept. at is ni's place in the list the
// cycle filters (memo's front, sigMemo.at). It returns the status and its
// code, which a verdict read from memo holds without its status.
// O(filters), O(1) on a hit.
func (s *Scheduler) filterNode(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo, at int, memo *sigMemo) (*fwk.Status, fwk.Code) {
	if memo == nil {
		st := s.cur.fw.Framework().RunFilterPluginsWithNominatedPods(ctx, cs, pod, ni)
		return st, st.Code()
	}
	gen := ni.GetGeneration()
	stamp, ok := memo.stamp(ni, gen, at)
	if !ok {
		st := s.cur.fw.Framework().RunFilterPluginsWithNominatedPods(ctx, cs, pod, ni)
		return st, st.Code()
	}
	if v, ok := memo.lookup(at, ni, gen, stamp); ok {
		s.fmemoHits++
		return v.st, v.code
	}
	name := ni.Node().Name
	st := s.cur.fw.Framework().RunFilterPluginsWithNominatedPods(ctx, cs, pod, ni)
	code := st.Code()
	switch {
	case st.IsSuccess():
		v := memoVerdict{gen: gen, dra: stamp, code: code}
		memo.nodes[name] = v
		memo.place(at, ni, v)
	case code != fwk.Error:
		st = memo.intern(st)
		v := memoVerdict{gen: gen, dra: stamp, st: st, code: code}
		memo.nodes[name] = v
		memo.place(at, ni, v)
	}
	memo.writes++
	return st, code
}

// internStatuses bounds the rejections a signature's memo shares
// between nodes (sigMemo.intern): a kind of pod is refused for a few
// reasons (not enough CPU, memory, GPU; no device to allocate).
const internStatuses = 8

// intern returns a status kept before equal to st (of its code, plugin
// and reasons, neither with an error), else st, kept if fewer than
// internStatuses are and it has no error. The nodes that refuse the
// signature's pods alike then hold one status object, which a failed
// cycle's diagnosis (noteRejections) compares by its address, instead
// of loading each node's own object. The status is never changed once
// returned by a filter; a verdict read from the memo is the same object
// from cycle to cycle already. O(internStatuses x reasons).
func (memo *sigMemo) intern(st *fwk.Status) *fwk.Status {
	// A status with an error gives its reasons in a new list at each
	// call (the error's message first), one without gives its own.
	r := st.Reasons()
	if again := st.Reasons(); len(r) > 0 && &r[0] != &again[0] {
		return st
	}
	for _, kept := range memo.statuses {
		if kept.Code() == st.Code() && kept.Plugin() == st.Plugin() && slices.Equal(kept.Reasons(), r) {
			return kept
		}
	}
	if len(memo.statuses) < internStatuses {
		memo.statuses = append(memo.statuses, st)
	}
	return st
}

// lookup returns ni's verdict for generation gen and stamp, read at
// place at of the front or else by ni's name (and then placed at at);
// false if memo holds none for them. A place that holds ni itself with
// another verdict answers no without the look-up by name: every verdict
// written for ni is placed where ni was filtered, so the name's can be
// newer only if ni was filtered at another place since (a node came or
// went), and then the miss costs a filtering, never a wrong verdict
// (kube-scheduler's snapshot keeps a node's NodeInfo object as its
// content changes: on the GPU trace's draw nearly every miss was such a
// place, and its look-up by name a sixtieth of the run). O(1).
func (memo *sigMemo) lookup(at int, ni fwk.NodeInfo, gen int64, stamp profile.DRAStamp) (memoVerdict, bool) {
	if at < len(memo.at) {
		if p := &memo.at[at]; p.ni == ni {
			if p.v.gen == gen && p.v.dra == stamp {
				return p.v, true
			}
			if filterMemoPlaceSettles {
				return memoVerdict{}, false
			}
		}
	}
	v, ok := memo.nodes[ni.Node().Name]
	if !ok || v.gen != gen || v.dra != stamp {
		return memoVerdict{}, false
	}
	memo.place(at, ni, v)
	return v, true
}

// filterMemoPlaceSettles turns on lookup's answer from a place that
// holds the node with another verdict; tests turn it off to compare.
var filterMemoPlaceSettles = true

// place notes v as ni's verdict at place at of the cycle's list, growing
// the front to the list's length (numAll, bound) as needed. O(1)
// amortised.
func (memo *sigMemo) place(at int, ni fwk.NodeInfo, v memoVerdict) {
	if at >= len(memo.at) {
		if at >= cap(memo.at) {
			memo.at = slices.Grow(memo.at, at+1-len(memo.at))
		}
		memo.at = memo.at[:at+1]
	}
	memo.at[at] = placedVerdict{ni: ni, v: v}
}

// stamp is the DRAStamp of ni (of generation gen, at place at of the
// list the cycle filters) in the cycle memo was returned for, for a
// memo of a pod that DynamicResources filters, the zero stamp for any
// other; false if the node's verdict cannot be kept (its slices are not
// one of a pool of its own). O(1).
func (memo *sigMemo) stamp(ni fwk.NodeInfo, gen int64, at int) (profile.DRAStamp, bool) {
	if !memo.dra {
		return profile.DRAStamp{}, true
	}
	return memo.stamper.Stamp(ni, gen, at, memo.front)
}

// repeated returns the outcome of the signature's last cycle that found
// no node if a cycle over nodes (of numAll) would repeat it: no verdict
// written since, and every node unchanged (its generation, and its
// DRAStamp for a pod DynamicResources filters) and rejected. Its slices
// are clipped, so appending to them copies. O(nodes).
func (s *Scheduler) repeated(memo *sigMemo, nodes []fwk.NodeInfo, numAll int) (Outcome, bool) {
	if memo == nil {
		return Outcome{}, false
	}
	f := memo.fail
	if f == nil || f.writes != memo.writes || f.nodes != len(nodes) || f.numAll != numAll {
		return Outcome{}, false
	}
	if memo.dra || len(nodes) != numAll || newestGeneration(nodes) != f.newest {
		for i, ni := range nodes {
			gen := ni.GetGeneration()
			stamp, kept := memo.stamp(ni, gen, i)
			if !kept {
				return Outcome{}, false
			}
			v, ok := memo.lookup(i, ni, gen, stamp)
			if !ok || v.st == nil {
				return Outcome{}, false
			}
		}
	}
	s.fmemoHits += uint64(len(nodes))
	s.fmemoRepeats++
	out := f.out
	out.Plugins, out.Pending, out.Reasons = slices.Clip(out.Plugins), slices.Clip(out.Pending), slices.Clip(out.Reasons)
	return out, true
}

// endCycle drops the stamper of the cycle memo was returned for: it
// holds the cycle's DynamicResources memo, and with it the allocated
// state gathered for that cycle, which a signature's memo kept alive
// until its next cycle otherwise (one state per signature). nil-safe.
// O(1).
func (memo *sigMemo) endCycle() {
	if memo != nil {
		memo.stamper = profile.DRAStamper{}
	}
}

// bound forgets every verdict of memo once it holds more than twice as
// many nodes as the cluster has (nodes deleted since, in a cluster whose
// nodes come and go), so that it stays O(nodes). O(1), or O(kept) when
// it forgets.
func (memo *sigMemo) bound(numAll int) {
	if memo != nil && len(memo.nodes) > 2*numAll+64 {
		clear(memo.nodes)
		clear(memo.at)
		memo.at = memo.at[:0]
		memo.fail = nil
		memo.writes++
	}
}

// failed keeps out, the outcome of a cycle over nodes that found none.
// O(nodes).
func (memo *sigMemo) failed(out Outcome, nodes []fwk.NodeInfo, numAll int) {
	if memo != nil {
		memo.fail = &memoFailure{writes: memo.writes, nodes: len(nodes), numAll: numAll, newest: newestGeneration(nodes), out: out}
	}
}

// newestGeneration is the highest generation of nodes. O(nodes), with
// no look-up: the whole cluster's check in repeated.
func newestGeneration(nodes []fwk.NodeInfo) int64 {
	var g int64
	for _, ni := range nodes {
		g = max(g, ni.GetGeneration())
	}
	return g
}
