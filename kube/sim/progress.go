package sim

import "time"

// Progress is how far a run has got: the pods handled (bound, or deleted
// before they could be) out of the pods the scenario, its trace and its
// snapshot will create, and the virtual time.
//
// While the cluster is built, before virtual time starts, Building is
// true and Built counts the nodes added and the pod arrivals planned out
// of ToBuild.
type Progress struct {
	Handled, Total, Bound, Arrived int
	Now, End                       time.Duration
	Building                       bool
	Built, ToBuild                 int
}

// plannedPods counts the pods the run will create, not counting pods
// recreated after their node is removed.
func (s *sim) plannedPods() int {
	n := 0
	for _, g := range s.sc.Pods {
		n += g.Count
	}
	return n + len(s.x.traceLife) + s.x.snapshotPending()
}

func (s *sim) handled() int {
	n := 0
	for _, st := range s.order {
		if !st.bound.IsZero() || st.ext.end == endWithdrawn {
			n++
		}
	}
	return n
}

// wireStatus makes Options.Progress report to Options.Status.
func (s *sim) wireStatus() {
	if s.o.Status == nil {
		return
	}
	total := s.plannedPods()
	status, inner := s.o.Status, s.o.Progress
	s.o.Progress = func(now, end time.Duration, bound, arrived int) {
		if inner != nil {
			inner(now, end, bound, arrived)
		}
		status(Progress{Handled: s.handled(), Total: max(total, arrived), Bound: bound, Arrived: arrived, Now: now, End: end})
	}
}

func (x *extras) snapshotPending() int {
	if x.snapshot == nil {
		return 0
	}
	return x.snapshot.Pending
}

// buildStep counts one node added or one arrival planned while the
// cluster is built, and reports it to Options.Status every 4096 steps
// (under 250 reports for the largest scenario).
func (s *sim) buildStep() {
	if s.build.over {
		return // nodes added by events, during the run
	}
	s.build.done++
	if s.o.Status == nil || s.build.done%4096 != 0 {
		return
	}
	s.o.Status(Progress{Building: true, Built: s.build.done, ToBuild: s.build.total})
}

// buildProgress is how far the building of the cluster has got.
type buildProgress struct {
	done, total int
	over        bool
}

// toBuild counts the scenario's nodes and pods: the steps of building.
func (sc *Scenario) toBuild() int {
	n := 0
	for _, g := range sc.Nodes {
		n += g.Count
	}
	for _, g := range sc.Pods {
		n += g.Count
	}
	return n
}
