package profile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	feature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/dynamic-resource-allocation/deviceclass/extendedresourcecache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	backendcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodevolumelimits"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	"k8s.io/kubernetes/pkg/scheduler/util/assumecache"

	resourceslicetracker "k8s.io/dynamic-resource-allocation/resourceslice/tracker"

	"github.com/schedq/schedq/kube/clusterevent"
)

// Cluster is the in-memory cluster a Framework schedules against.
type Cluster struct {
	// Nodes, and the pods bound or assumed on them (spec.nodeName set):
	// the cycle's snapshot.
	Nodes []*v1.Node
	Pods  []*v1.Pod
	// Objects are the other objects the plugins list: PersistentVolumes,
	// PersistentVolumeClaims, StorageClasses, CSINodes, Services,
	// ReplicaSets, DeviceClasses, ResourceSlices, ResourceClaims... Each
	// type must be one a plugin of the profile reads.
	Objects []runtime.Object
}

// Framework is kube-scheduler's framework runtime for one profile over an
// immutable snapshot of a Cluster. Its plugins read the cluster through
// listers of informers that never run: the objects were put in their
// stores, and their handlers called, before NewFramework returned.
//
// Schedule is not safe for concurrent use (the framework's parallelism is
// 1, so a cycle runs on the caller's goroutine only).
type Framework struct {
	fwk     framework.Framework
	dp      *defaultpreemption.DefaultPreemption
	snap    *backendcache.Snapshot
	factory *syncFactory
	cancel  context.CancelFunc
	norm    *normalizer // nil: no ScoreTable
	signs   signMemo    // SignPod's signatures by pod
	// signWrites counts the writes of the objects a signer reads besides
	// the pod: those of the kinds spreadSigner reads and of
	// DeviceClasses, as the synchronous factory makes them
	// (syncFactory.wrote) or, on a real cluster, as its informers see
	// them (signInputs).
	signWrites *atomic.Uint64
	// postFilters are the profile's PostFilter plugins but
	// DefaultPreemption (RunPostFilterWithoutPreemption).
	postFilters []fwk.PostFilterPlugin
	// sources are the DRA manager's stores as event sources
	// (EventSources); nil on the synchronous factory.
	sources map[string]EventSource
	// fitIgnored is what NodeResourcesFit's args ignore (FitSkips).
	fitIgnored fitIgnored
	// holds are the claims' allocations in flight held for bindings in
	// doubt (drahold.go), shared with the frameworks built alongside
	// (Setup.Alongside), whose DRA manager is this one's.
	holds *claimHolds
	// wired is the wiring the plugins were given, the DRA manager before
	// its tap: what a framework built alongside takes (Setup.Alongside).
	wired wiring
	// types names the plugins by the type of their instance (PanicSite).
	types map[string]string
	// built are the plugin instances by name; reserve the Reserve
	// plugins in order, listed once (Unreserve).
	built       map[string]fwk.Plugin
	reserveOnce sync.Once
	reserve     []fwk.ReservePlugin
	// postBind are the PostBind plugins in order, listed once (PostBind).
	postBindOnce sync.Once
	postBind     []fwk.PostBindPlugin
}

// Name returns the framework's profile's schedulerName. O(1).
func (f *Framework) Name() string { return f.fwk.ProfileName() }

// NewFramework builds the framework of prof (a profile of a Config from
// Load or Default) with Registry, over c, whose snapshot it builds. It is
// NewFrameworkOn with that snapshot and c's objects.
func NewFramework(ctx context.Context, prof *config.KubeSchedulerProfile, c Cluster) (*Framework, error) {
	return NewFrameworkOn(ctx, prof, Setup{
		Snapshot: backendcache.NewSnapshot(c.Pods, c.Nodes),
		Objects:  append(podsAndNodes(c), c.Objects...),
	})
}

// Setup is what NewFrameworkOn builds a framework over.
type Setup struct {
	// Snapshot is what every Filter and Score reads. Its owner may bring
	// it up to date between cycles (scheduler.Cache.UpdateSnapshot), never
	// during one. Required.
	Snapshot *backendcache.Snapshot
	// Objects are put in the informers' stores, as Cluster's are.
	Objects []runtime.Object
	// Plugins are added to Registry for this framework only (a test's
	// plugin, say), or implement one of OutOfTree's (GPUDevices, whose
	// model is the simulator's); an in-tree name is an error.
	Plugins frameworkruntime.Registry
	// Informers, if set, is a real cluster's informer factory: the
	// plugins list what its informers hold and add their handlers to
	// them, and Client (required with it) is what they write with
	// (VolumeBinding binds claims at PreBind, DRA writes allocations).
	// The plugins create their informers while NewFrameworkOn builds
	// them, so the caller starts the factory after it returns, and waits
	// for its caches to sync before the first cycle. Objects must then be
	// empty. Without Informers, the plugins get the synchronous factory
	// (tests, the simulator), and Client if set (the simulator's, which
	// answers DRA's writes of claims), else a fake clientset.
	Informers informers.SharedInformerFactory
	Client    kubernetes.Interface
	// WrapDRA, if set, wraps the DRA manager the plugins are given (the
	// framework's documented way to present DRA objects as a program
	// sees them: the simulator's GPUDevices orders a node's devices for
	// DRA's allocator), and may name the keeper of the allocated state
	// that the wrapper keeps itself (DRAWrap).
	WrapDRA func(fwk.SharedDRAManager) DRAWrap
	// NotePod, if set, is told the pod DynamicResources' PreFilter runs
	// for, before that PreFilter lists the slices its allocator tries,
	// in a lone pod's cycle and for each member of a group's alike: for
	// a WrapDRA whose slice lists depend on the pod (the simulator lists
	// a node's GPUs with a GPU policy's choice for the pod first). It
	// runs on the scheduling loop and must be fast.
	NotePod func(*v1.Pod)
	// Recorder, if set, is where the plugins record events
	// (DynamicResources' BindingConditionsPending, as kube-scheduler's
	// plugins record with their profile's recorder); nil drops them.
	// The framework always has one: DynamicResources' PreBind calls it
	// unchecked, and panicked without it.
	Recorder events.EventRecorderLogger
	// Alongside, if set, is another profile's framework whose client,
	// informer factory (real or synchronous), DRA manager and claim holds
	// this one shares, as kube-scheduler's profiles share them: a claim
	// one profile allocates is then in flight for the other's plugins at
	// once. Snapshot must be Alongside's, and Informers, Client, Objects
	// and WrapDRA empty: they are Alongside's. Close this framework
	// before Alongside.
	Alongside *Framework
}

// recorderOf is s.Recorder, or one that drops the events (client-go's
// fake recorder without a channel).
func recorderOf(s Setup) events.EventRecorderLogger {
	if s.Recorder != nil {
		return s.Recorder
	}
	return &events.FakeRecorder{}
}

// wiring is the clientset, informer factory and DRA manager a framework's
// plugins are given; sync is the synchronous factory (nil on a real
// one), through which objects are added, updated and deleted.
type wiring struct {
	client  kubernetes.Interface
	factory informers.SharedInformerFactory
	dra     fwk.SharedDRAManager
	sync    *syncFactory
	sources map[string]EventSource // the DRA manager's stores; nil on sync
	// classWrites counts the DeviceClass events the DRA manager's class
	// resolver has taken, on a real factory (signInputs); nil on sync.
	classWrites *atomic.Uint64
	claims      EventSource // the DRA manager's assume cache of claims, on either factory
	// published is the DRA manager's slice tracker, if its events come
	// for every change of the slice objects it lists (no device taint
	// rules: with them it may replace a slice by an equal one without
	// an event); nil otherwise. Its events are counted (draTap.pubEvents).
	published EventSource
	keeper    DRAKeeper // Setup.WrapDRA's keeper of the allocated state, or nil
}

// wire builds s's wiring: the real client and factory if s has them, else
// a fake clientset and the synchronous factory.
func wire(ctx context.Context, s Setup) (wiring, error) {
	if s.Informers == nil {
		client := s.Client
		if client == nil {
			client = FakeClient()
		}
		sf := newSyncFactory(informers.NewSharedInformerFactory(client, 0))
		dra, sources, err := newDRAManager(ctx, client, sf, false, nil)
		return wiring{client: client, factory: sf, dra: dra, sync: sf, claims: sources[clusterevent.ResourceClaim],
			published: sources[clusterevent.ResourceSlice]}, err
	}
	if s.Client == nil {
		return wiring{}, errors.New("an informer factory without a client")
	}
	if len(s.Objects) > 0 {
		return wiring{}, errors.New("objects are read from the informer factory; Objects must be empty")
	}
	classWrites := &atomic.Uint64{}
	taintRules := feature.DefaultFeatureGate.Enabled(features.DRADeviceTaintRules)
	dra, sources, err := newDRAManager(ctx, s.Client, s.Informers, taintRules, classWrites)
	w := wiring{client: s.Client, factory: s.Informers, dra: dra, sources: sources, claims: sources[clusterevent.ResourceClaim], classWrites: classWrites}
	if !taintRules {
		w.published = sources[clusterevent.ResourceSlice]
	}
	return w, err
}

// wireFor is the wiring of a framework built on s: Alongside's, or a new
// one (wire) with s.WrapDRA around its DRA manager.
func wireFor(ctx context.Context, s Setup) (wiring, error) {
	if a := s.Alongside; a != nil {
		if s.Snapshot != a.snap {
			return wiring{}, errors.New("a framework built alongside another must share its snapshot")
		}
		if s.Informers != nil || s.Client != nil || len(s.Objects) > 0 || s.WrapDRA != nil {
			return wiring{}, errors.New("a framework built alongside another takes its informers, client, objects and DRA manager")
		}
		return a.wired, nil
	}
	w, err := wire(ctx, s)
	if err != nil {
		return w, err
	}
	if s.WrapDRA != nil {
		dw := s.WrapDRA(w.dra)
		if dw.Manager == nil {
			return w, errors.New("DRA manager: Setup.WrapDRA returned no manager")
		}
		w.dra, w.keeper = dw.Manager, dw.Keeper
	}
	if w.keeper != nil && w.claims != nil {
		if err := w.keeper.WatchClaims(w.claims); err != nil {
			return w, fmt.Errorf("DRA manager: %w", err)
		}
	}
	return w, nil
}

// DRAWrap is what Setup.WrapDRA returns: the DRA manager the plugins
// are given, and the keeper of the allocated state if the wrapper keeps
// it itself (nil: DynamicResources gathers it as upstream's does, and
// its memo counts the shares and reads every device anew).
type DRAWrap struct {
	Manager fwk.SharedDRAManager
	Keeper  DRAKeeper
}

// DRAKeeper keeps DynamicResources' allocated state from the claims'
// events instead of having it gathered anew each cycle (the simulator's
// does), and answers what DynamicResources' memo would otherwise
// compute from a gathered state.
type DRAKeeper interface {
	ClaimWatcher
	ShareCounter
	PoolVersioner
}

// ClaimWatcher follows the claims as DynamicResources sees them:
// WatchClaims is given the manager's assume cache of claims (informer
// events and the plugin's own assumed writes) once, when the framework
// is built, and adds its handler to it (the cache sends the claims it
// holds already as adds).
type ClaimWatcher interface {
	WatchClaims(EventSource) error
}

// NewFrameworkOn builds the framework of prof with Registry (and
// s.Plugins) over s. It registers kube-scheduler's metrics (once per
// process), and gives the plugins s's client and informer factory (or a
// fake clientset and the synchronous informer factory) and a DRA manager
// on them. Close releases it. Errors are upstream's (an unknown plugin,
// bad args...).
func NewFrameworkOn(ctx context.Context, prof *config.KubeSchedulerProfile, s Setup) (*Framework, error) {
	if s.Snapshot == nil {
		return nil, fmt.Errorf("profile %q: no snapshot", prof.SchedulerName)
	}
	metrics.Register()
	r, err := Registry()
	if err != nil {
		return nil, err
	}
	if err := mergeImplementations(r, s.Plugins); err != nil {
		return nil, err
	}
	var dp *defaultpreemption.DefaultPreemption
	capturePreemption(r, &dp)
	scorers := map[string]fwk.ScorePlugin{}
	captureScorers(r, scorers)
	built := map[string]fwk.Plugin{}
	capturePlugins(r, built)
	ctx, cancel := context.WithCancel(ctx)
	w, err := wireFor(ctx, s)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("profile %q: %w", prof.SchedulerName, err)
	}
	wired := w
	tap := newDRATap(w.dra, w.keeper, s.NotePod)
	tap.scoresDRA = scoresDRA(prof)
	if w.published != nil {
		if err := tap.countPublished(w.published); err != nil {
			cancel()
			return nil, fmt.Errorf("profile %q: DRA manager: %w", prof.SchedulerName, err)
		}
	}
	w.dra = tap
	f, err := frameworkruntime.NewFramework(ctx, r, prof,
		frameworkruntime.WithClientSet(w.client),
		frameworkruntime.WithInformerFactory(w.factory),
		frameworkruntime.WithSharedDRAManager(w.dra),
		// NodeVolumeLimits' Filter dereferences it for any pod with a claim.
		frameworkruntime.WithSharedCSIManager(nodevolumelimits.NewCSIManager(w.factory.Storage().V1().CSINodes().Lister())),
		frameworkruntime.WithSnapshotSharedLister(s.Snapshot),
		// DefaultPreemption lists the nodes through it.
		frameworkruntime.WithMutableSnapshotLister(s.Snapshot),
		frameworkruntime.WithParallelism(1),
		frameworkruntime.WithLogger(klog.FromContext(ctx)),
		frameworkruntime.WithEventRecorder(recorderOf(s)),
	)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("profile %q: %w", prof.SchedulerName, err)
	}
	for _, obj := range s.Objects {
		if err := w.sync.Add(obj); err != nil {
			cancel()
			return nil, err
		}
	}
	fr := &Framework{fwk: f, dp: dp, postFilters: postFiltersBut(f, built, defaultpreemption.Name), snap: s.Snapshot, factory: w.sync, cancel: cancel,
		norm: newNormalizer(f, scorers), sources: w.sources, fitIgnored: newFitIgnored(prof), holds: &claimHolds{}, wired: wired, types: pluginTypes(built), built: built}
	if s.Alongside != nil {
		fr.holds = s.Alongside.holds
	}
	if w.sync != nil {
		fr.signWrites = &w.sync.writes
	} else if fr.signWrites, err = signInputs(f, w.factory, w.classWrites); err != nil {
		cancel()
		return nil, fmt.Errorf("profile %q: %w", prof.SchedulerName, err)
	}
	return fr, nil
}

// mergeImplementations adds extra to r: a name of OutOfTree replaces its
// placeholder factory, an in-tree name is an error. O(len(extra)).
func mergeImplementations(r, extra frameworkruntime.Registry) error {
	outOfTree := OutOfTree()
	for name, f := range extra {
		if _, ok := outOfTree[name]; ok {
			r[name] = f
			continue
		}
		if _, ok := r[name]; ok {
			return fmt.Errorf("a plugin named %q is already registered", name)
		}
		r[name] = f
	}
	return nil
}

// podsAndNodes lists c's pods and nodes as objects for the informers.
func podsAndNodes(c Cluster) []runtime.Object {
	out := make([]runtime.Object, 0, len(c.Pods)+len(c.Nodes))
	for _, n := range c.Nodes {
		out = append(out, n)
	}
	for _, p := range c.Pods {
		out = append(out, p)
	}
	return out
}

// newDRAManager builds the DRA manager as kube-scheduler does, on the
// factory's ResourceClaim and ResourceSlice informers, with device taint
// rules if taintRules (the synchronous factory goes without: they would
// start goroutines of their own). Its DeviceClass resolver, when the
// DRAExtendedResource gate gives it one, listens to the DeviceClass
// informer, as kube-scheduler's event handlers make it, and counts in
// classWrites (if not nil) each event once the resolver has taken it. It
// also returns its claims' and slices' stores as event sources (see
// EventSources).
func newDRAManager(ctx context.Context, client kubernetes.Interface, factory informers.SharedInformerFactory, taintRules bool,
	classWrites *atomic.Uint64) (fwk.SharedDRAManager, map[string]EventSource, error) {
	claims := assumecache.NewAssumeCache(klog.FromContext(ctx), factory.Resource().V1().ResourceClaims().Informer(), "ResourceClaim", "", nil)
	opts := resourceslicetracker.Options{
		SliceInformer:            factory.Resource().V1().ResourceSlices(),
		KubeClient:               client,
		EnableConsumableCapacity: feature.DefaultFeatureGate.Enabled(features.DRAConsumableCapacity),
	}
	if taintRules {
		opts.EnableDeviceTaintRules = true
		opts.TaintInformer = factory.Resource().V1().DeviceTaintRules()
	}
	slices, err := resourceslicetracker.StartTracker(ctx, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("resource slice tracker: %w", err)
	}
	m := dynamicresources.NewDRAManager(ctx, claims, slices, factory)
	if ext, ok := m.DeviceClassResolver().(*extendedresourcecache.ExtendedResourceCache); ok && ext != nil {
		var h cache.ResourceEventHandler = ext
		if classWrites != nil {
			h = countedHandler{h: ext, n: classWrites}
		}
		if _, err := factory.Resource().V1().DeviceClasses().Informer().AddEventHandler(h); err != nil {
			return nil, nil, fmt.Errorf("device classes: %w", err)
		}
	}
	sources := map[string]EventSource{clusterevent.ResourceClaim: claimEvents{claims}, clusterevent.ResourceSlice: slices}
	return m, sources, nil
}

// countedHandler is h, which counts each event in n once h has taken it:
// a count read after an event's handling has moved, so that a signature
// computed from what h keeps before that is not reused after it.
type countedHandler struct {
	h cache.ResourceEventHandler
	n *atomic.Uint64
}

func (c countedHandler) OnAdd(obj any, initial bool) { c.h.OnAdd(obj, initial); c.n.Add(1) }
func (c countedHandler) OnUpdate(old, obj any)       { c.h.OnUpdate(old, obj); c.n.Add(1) }
func (c countedHandler) OnDelete(obj any)            { c.h.OnDelete(obj); c.n.Add(1) }

// Close stops the framework's plugins and its background metrics flush.
func (f *Framework) Close() error {
	defer f.cancel()
	return f.fwk.Close()
}

// Framework returns upstream's framework, to run extension points this
// type does not wrap.
func (f *Framework) Framework() framework.Framework { return f.fwk }

// AddObject puts obj (a PersistentVolume, a StorageClass...: a type some
// plugin reads) in its informer's store and calls that informer's
// handlers on the caller's goroutine before it returns; an object with
// the key of one stored is an update. UpdateObject replaces a stored
// object, DeleteObject removes one; each fails if none is stored. They
// let an owner that is the only writer (the simulator's event loop) keep
// the plugins' view of the cluster in step, deterministically. Safe for
// concurrent use, but not during a cycle: the plugins read the stores
// without a lock of this type. O(handlers). On a real cluster's informer
// factory (Setup.Informers) they fail: the informers own their stores.
func (f *Framework) AddObject(obj runtime.Object) error {
	if f.factory == nil {
		return errRealInformers
	}
	return f.factory.Add(obj)
}

// UpdateObject: see AddObject.
func (f *Framework) UpdateObject(obj runtime.Object) error {
	if f.factory == nil {
		return errRealInformers
	}
	return f.factory.Update(obj)
}

// DeleteObject: see AddObject.
func (f *Framework) DeleteObject(obj runtime.Object) error {
	if f.factory == nil {
		return errRealInformers
	}
	return f.factory.Delete(obj)
}

var errRealInformers = errors.New("the framework reads a real cluster's informers: objects come from the API server")

// Snapshot returns the snapshot the framework's plugins read.
func (f *Framework) Snapshot() *backendcache.Snapshot { return f.snap }

// Result is the outcome of Schedule.
type Result struct {
	// Status is why no node fits (PreFilter's failure, or the last
	// Filter failure), nil if some do.
	Status *fwk.Status
	// Feasible lists the nodes that pass every filter, in snapshot order;
	// Rejected gives each other node's status.
	Feasible []string
	Rejected map[string]*fwk.Status
	// Scores are the feasible nodes' weighted total scores, Best the
	// highest (the first in snapshot order on a tie).
	Scores map[string]int64
	Best   string
}

// Schedule runs PreFilter, Filter on every node (those PreFilter allows),
// PreScore and Score for pod: one scheduling cycle without the pick's
// random tie-break, the nominated pods or Reserve. O(nodes x plugins).
// A plugin that panics fails this call with an error, not the process.
func (f *Framework) Schedule(ctx context.Context, pod *v1.Pod) (res Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("pod %s/%s: plugin panic: %v", pod.Namespace, pod.Name, r)
		}
	}()
	res = Result{Rejected: map[string]*fwk.Status{}}
	state := framework.NewCycleState()
	pre, st, _ := f.fwk.RunPreFilterPlugins(ctx, state, pod)
	if !st.IsSuccess() {
		if st.Code() == fwk.Error {
			return res, st.AsError()
		}
		res.Status = st
		return res, nil
	}
	nodes, err := f.snap.NodeInfos().List()
	if err != nil {
		return res, err
	}
	feasible := make([]fwk.NodeInfo, 0, len(nodes))
	for _, ni := range nodes {
		if pre != nil && pre.NodeNames != nil && !pre.NodeNames.Has(ni.Node().Name) {
			continue
		}
		st := f.fwk.RunFilterPlugins(ctx, state, pod, ni)
		if st.IsSuccess() {
			feasible = append(feasible, ni)
			res.Feasible = append(res.Feasible, ni.Node().Name)
			continue
		}
		if st.Code() == fwk.Error {
			return res, st.AsError()
		}
		res.Rejected[ni.Node().Name], res.Status = st, st
	}
	if len(feasible) == 0 {
		return res, nil
	}
	res.Status = nil
	if st := f.fwk.RunPreScorePlugins(ctx, state, pod, feasible); !st.IsSuccess() {
		return res, st.AsError()
	}
	ctx = f.WithPanicSink(ctx) // Score runs on the parallelizer
	scores, st := f.ScoreNodes(ctx, state, pod, feasible)
	RepanicIn(ctx, st.IsSuccess() && !ScoredAll(scores)) // here, where the recovery above turns it into an error
	if !st.IsSuccess() {
		return res, st.AsError()
	}
	res.Scores = make(map[string]int64, len(scores))
	best := int64(-1)
	for _, s := range scores {
		res.Scores[s.Name] = s.TotalScore
		if s.TotalScore > best {
			res.Best, best = s.Name, s.TotalScore
		}
	}
	return res, nil
}
