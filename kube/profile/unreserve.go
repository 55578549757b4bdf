package profile

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// Unreserve runs the Unreserve of f's Reserve plugins for pod on node,
// in the reverse of their order, as the framework's
// RunReservePluginsUnreserve does, except that a plugin's panic ends
// only its own Unreserve: the others still run, so that what they
// reserved (DynamicResources' claims in flight, VolumeBinding's assumed
// volumes) is given back. Each panic is returned, naming its plugin
// (nil if none). The framework's Unreserve metrics are not observed.
// O(Reserve plugins).
func (f *Framework) Unreserve(ctx context.Context, state fwk.CycleState, pod *v1.Pod, node string) []error {
	pls := f.reservePlugins()
	if pls == nil {
		f.fwk.RunReservePluginsUnreserve(ctx, state, pod, node)
		return nil
	}
	var panics []error
	for i := len(pls) - 1; i >= 0; i-- {
		if err := unreserveOne(ctx, pls[i], state, pod, node); err != nil {
			panics = append(panics, err)
		}
	}
	return panics
}

// unreserveOne runs pl's Unreserve, its panic returned as an error.
func unreserveOne(ctx context.Context, pl fwk.ReservePlugin, state fwk.CycleState, pod *v1.Pod, node string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v (plugin %s, at Unreserve)", r, pl.Name())
		}
	}()
	pl.Unreserve(ctx, state, pod, node)
	return nil
}

// reservePlugins lists f's Reserve plugins in the profile's order, from
// the instances built; nil if one of them was not captured. Listed once.
func (f *Framework) reservePlugins() []fwk.ReservePlugin {
	f.reserveOnce.Do(func() {
		p := f.fwk.ListPlugins()
		if p == nil {
			return
		}
		out := []fwk.ReservePlugin{}
		for _, c := range p.Reserve.Enabled {
			pl, ok := f.built[c.Name].(fwk.ReservePlugin)
			if !ok {
				return
			}
			out = append(out, pl)
		}
		f.reserve = out
	})
	return f.reserve
}

// PostBind runs the PostBind plugins of f for pod, bound to node, in
// their order, as the framework's RunPostBindPlugins does, except that a
// plugin's panic ends only its own PostBind: the plugins after it still
// run. Each panic is returned, naming its plugin (nil if none). The
// framework's PostBind metrics are not observed. O(PostBind plugins).
func (f *Framework) PostBind(ctx context.Context, state fwk.CycleState, pod *v1.Pod, node string) []error {
	pls := f.postBindPlugins()
	if pls == nil {
		f.fwk.RunPostBindPlugins(ctx, state, pod, node)
		return nil
	}
	var panics []error
	for _, pl := range pls {
		if err := postBindOne(ctx, pl, state, pod, node); err != nil {
			panics = append(panics, err)
		}
	}
	return panics
}

// postBindOne runs pl's PostBind, its panic returned as an error.
func postBindOne(ctx context.Context, pl fwk.PostBindPlugin, state fwk.CycleState, pod *v1.Pod, node string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v (plugin %s, at PostBind)", r, pl.Name())
		}
	}()
	pl.PostBind(ctx, state, pod, node)
	return nil
}

// postBindPlugins lists f's PostBind plugins in the profile's order,
// from the instances built; nil if one of them was not captured. Listed
// once.
func (f *Framework) postBindPlugins() []fwk.PostBindPlugin {
	f.postBindOnce.Do(func() {
		p := f.fwk.ListPlugins()
		if p == nil {
			return
		}
		out := []fwk.PostBindPlugin{}
		for _, c := range p.PostBind.Enabled {
			pl, ok := f.built[c.Name].(fwk.PostBindPlugin)
			if !ok {
				return
			}
			out = append(out, pl)
		}
		f.postBind = out
	})
	return f.postBind
}
