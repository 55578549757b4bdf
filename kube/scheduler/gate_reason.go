package scheduler

import (
	"context"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/plugins"
	"github.com/schedq/schedq/kube/profile"
)

// GateReasons asks a framework's PreEnqueue plugins again why they hold a
// pod back. The queue's gates (profile.QueueHints) keep only whether a
// plugin admits the pod, so its Explain names the gating plugin but not
// its reason (DynamicResources' `resourceclaim "x" not found`); the
// debug endpoints complete a gated pod's explanation with it (Explain).
// A PreEnqueue plugin reads only the pod and informers' stores or assume
// caches, whose locks are leaves, so asking it from any goroutine, with
// no lock held, is safe and cheap. Safe for concurrent use.
type GateReasons struct {
	ctx context.Context
	// plugins are the PreEnqueue plugins by name: of the one framework
	// under "" (every pod's), else by profile name (a pod's profile's).
	plugins map[string]map[string]fwk.PreEnqueuePlugin
	one     bool
	// cache, if set, gives the gang gate's reason (UseGangGate).
	cache *Cache
}

// WithGangGate makes g give the gang gate's reason too (Cache.GangGateReason:
// how many members the group has of its minCount), from c, the cache the
// gate reads. It returns g.
func (g *GateReasons) WithGangGate(c *Cache) *GateReasons {
	g.cache = c
	return g
}

// NewGateReasons returns the PreEnqueue plugins of fws, asked with ctx
// (as the queue's gates are): one framework's, asked about every pod, or
// several profiles' (UseProfileHints), each asked about its profile's
// pods only.
func NewGateReasons(ctx context.Context, fws ...*profile.Framework) *GateReasons {
	g := &GateReasons{ctx: ctx, plugins: map[string]map[string]fwk.PreEnqueuePlugin{}, one: len(fws) == 1}
	for _, fw := range fws {
		name := fw.Name()
		if g.one {
			name = ""
		}
		byName := map[string]fwk.PreEnqueuePlugin{}
		for _, pl := range fw.Framework().PreEnqueuePlugins() {
			byName[pl.Name()] = pl
		}
		g.plugins[name] = byName
	}
	return g
}

// Of returns why plugin holds pod back now: its status's message, or its
// code if it gives none. It returns "" if plugin is none of the
// framework's (of pod's profile's) (one of schedq's own gates) or if it admits pod now (the
// event that will move the pod has not reached the queue yet).
func (g *GateReasons) Of(plugin string, pod *v1.Pod) string {
	name := ""
	if !g.one {
		name = pod.Spec.SchedulerName
	}
	if plugin == plugins.GangSchedulingName && g.cache != nil {
		return g.cache.GangGateReason(pod)
	}
	pl := g.plugins[name][plugin]
	if pl == nil {
		return ""
	}
	st := profile.RunPreEnqueue(g.ctx, pl, pod)
	if st.IsSuccess() {
		return ""
	}
	if msg := st.Message(); msg != "" {
		return msg
	}
	return st.Code().String()
}

// Explain completes x, the explanation of pod, with its gating plugin's
// reason (Of) if pod is gated: the reason reads "gated by P: <reason>;
// waiting for ...". A group member's explanation is left as it is (its
// group may be gated by another member), but for the gang gate's, which
// is the group's: "... is gated by GangScheduling: <reason>; ...". O(1)
// beyond the plugin's call.
func (g *GateReasons) Explain(x *schedq.Explanation[types.NamespacedName], pod *v1.Pod) {
	if x.Location != schedq.InGated || x.GatedBy == "" || pod == nil {
		return
	}
	if x.Group != "" {
		head := "is gated by " + plugins.GangSchedulingName
		if i := strings.Index(x.Reason, head); x.GatedBy == plugins.GangSchedulingName && i >= 0 {
			if msg := g.Of(x.GatedBy, pod); msg != "" {
				i += len(head)
				x.Reason = x.Reason[:i] + ": " + msg + x.Reason[i:]
			}
		}
		return
	}
	head := "gated by " + x.GatedBy
	if !strings.HasPrefix(x.Reason, head) {
		return
	}
	if msg := g.Of(x.GatedBy, pod); msg != "" {
		x.Reason = head + ": " + msg + x.Reason[len(head):]
	}
}
