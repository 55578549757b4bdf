package framework

import "context"

// PreFilterExtensions is a PreFilter plugin that can keep its cycle state
// right when a pod is put on a node or taken off it without a new
// PreFilter pass: preemption's search uses it as it tries nodes without
// their victims. AddPod and RemovePod change state only (a copy the search
// made with CycleState.Clone).
type PreFilterExtensions interface {
	PreFilterPlugin
	AddPod(ctx context.Context, state *CycleState, pod, added *PodInfo, node *NodeInfo) *Status
	RemovePod(ctx context.Context, state *CycleState, pod, removed *PodInfo, node *NodeInfo) *Status
}

// StateCloner is cycle state that CycleState.Clone copies deeply; other
// values are shared between the copies, so they must be read-only.
type StateCloner interface {
	CloneState() any
}

// Clone returns a copy of the state, each value that implements
// StateCloner copied by it. O(entries) plus the clones.
func (c *CycleState) Clone() *CycleState {
	out := &CycleState{entries: make([]stateEntry, len(c.entries))}
	for i, e := range c.entries {
		if sc, ok := e.v.(StateCloner); ok {
			e.v = sc.CloneState()
		}
		out.entries[i] = e
	}
	return out
}
