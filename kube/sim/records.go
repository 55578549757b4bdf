package sim

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/schedq/schedq"
)

// PodRecord is what happened to one pod, in virtual seconds from the
// start of the run. A time that never came is -1.
type PodRecord struct {
	Namespace string  `json:"namespace"`
	Name      string  `json:"name"`
	Group     string  `json:"group"`
	Priority  int32   `json:"priority"`
	Created   float64 `json:"created"`
	// FirstAttempt is the start of its first scheduling attempt.
	FirstAttempt float64 `json:"firstAttempt"`
	Bound        bool    `json:"bound"`
	BoundAt      float64 `json:"boundAt"`
	Node         string  `json:"node"`
	Attempts     int     `json:"attempts"`
	// Wait is from creation to binding, or to its end or the run's end if
	// it was never bound.
	Wait float64 `json:"wait"`
	// End is finished, deleted (while bound), preempted (evicted to make
	// room for another pod), withdrawn (deleted while pending) or empty;
	// EndedAt when.
	End     string  `json:"end"`
	EndedAt float64 `json:"endedAt"`
	// Place is where a pod never bound was at the end (gated, active,
	// backoff, unschedulable, or inflight: its attempt or binding under
	// way) and LastFailure its last failure message.
	Place       string `json:"place"`
	LastFailure string `json:"lastFailure"`
	// The virtual seconds it spent in each of the queue's places: activeQ,
	// backoffQ, parked unschedulable, parked gated, and in flight (being
	// tried or bound). For a pod that entered the queue as it was created,
	// they add up to Wait.
	InActive        float64 `json:"inActive"`
	InBackoff       float64 `json:"inBackoff"`
	InUnschedulable float64 `json:"inUnschedulable"`
	InGated         float64 `json:"inGated"`
	InFlight        float64 `json:"inFlight"`
	// InGroupWait is the time a gang member waited for its group: for the
	// group object, or for its group's attempt to end.
	InGroupWait float64 `json:"inGroupWait"`
}

func since(t time.Time) float64 {
	if t.IsZero() {
		return -1
	}
	return t.Sub(epoch).Seconds()
}

// records lists every pod in arrival order.
func (s *sim) records() []PodRecord {
	out := make([]PodRecord, 0, len(s.order))
	for _, st := range s.order {
		r := PodRecord{
			Namespace: st.key.Namespace, Name: st.key.Name, Group: st.ext.group, Priority: st.priority,
			Created: since(st.arrived), FirstAttempt: since(st.ext.firstAttempt),
			Bound: !st.bound.IsZero(), BoundAt: since(st.bound), Node: st.ext.node, Attempts: st.attempts,
			End: st.ext.end, EndedAt: since(st.ext.ended), LastFailure: st.lastMessage,
		}
		if p := s.cl.pods[st.key]; r.Group == "" && p != nil {
			r.Group = p.Labels["group"]
		}
		until := s.now
		switch {
		case r.Bound:
			until = st.bound
		case !st.ext.ended.IsZero():
			until = st.ext.ended
		default:
			if _, loc, ok := s.core.Get(st.key); ok {
				r.Place = loc.String()
			}
		}
		r.Wait = until.Sub(st.arrived).Seconds()
		spent := st.place.spentUntil(s.now)
		if st.place.member && r.Bound && st.place.loc == 0 {
			// A gang's attempt ends when its members are assumed; the
			// rest of their binding happens outside the queue.
			spent[schedq.InFlight] += st.bound.Sub(st.arrived) - sum(spent)
		}
		r.setPlaces(spent)
		out = append(out, r)
	}
	return out
}

var recordColumns = []string{"namespace", "name", "group", "priority", "created", "firstAttempt", "bound", "boundAt", "node",
	"attempts", "wait", "end", "endedAt", "place", "lastFailure",
	"inActive", "inBackoff", "inUnschedulable", "inGated", "inFlight", "inGroupWait"}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func (r PodRecord) row() []string {
	return []string{r.Namespace, r.Name, r.Group, strconv.Itoa(int(r.Priority)), ftoa(r.Created), ftoa(r.FirstAttempt),
		strconv.FormatBool(r.Bound), ftoa(r.BoundAt), r.Node, strconv.Itoa(r.Attempts), ftoa(r.Wait), r.End, ftoa(r.EndedAt),
		r.Place, r.LastFailure, ftoa(r.InActive), ftoa(r.InBackoff), ftoa(r.InUnschedulable), ftoa(r.InGated), ftoa(r.InFlight), ftoa(r.InGroupWait)}
}

func sum(ds [placeCount]time.Duration) time.Duration {
	var t time.Duration
	for _, d := range ds {
		t += d
	}
	return t
}

func (r *PodRecord) setPlaces(d [placeCount]time.Duration) {
	r.InActive, r.InBackoff = d[schedq.InActive].Seconds(), d[schedq.InBackoff].Seconds()
	r.InUnschedulable, r.InGated = d[schedq.InUnschedulable].Seconds(), d[schedq.InGated].Seconds()
	r.InFlight = d[schedq.InFlight].Seconds()
	r.InGroupWait = (d[schedq.InIncomplete] + d[schedq.InPending]).Seconds()
}

// WriteRecords writes one record per pod: JSON Lines for ".jsonl" (or
// ".json"), CSV with a header for ".csv".
func (r *Report) WriteRecords(w io.Writer, ext string) error {
	switch ext {
	case ".jsonl", ".json":
		enc := json.NewEncoder(w)
		for _, rec := range r.Records {
			if err := enc.Encode(rec); err != nil {
				return err
			}
		}
		return nil
	case ".csv":
		cw := csv.NewWriter(w)
		cw.Write(recordColumns)
		for _, rec := range r.Records {
			cw.Write(rec.row())
		}
		cw.Flush()
		return cw.Error()
	}
	return fmt.Errorf("%q: the file must end in .jsonl or .csv", ext)
}

var seriesColumns = []string{"t", "active", "backoff", "unschedulable", "gated", "inflight", "cpu", "memory", "gpu"}

// WriteSeries writes, as CSV, the sub-queue sizes and the allocated
// fractions of CPU, memory and GPU at every virtual instant either
// changed (t in seconds); each row holds until the next. A run that
// measures the GPUs' fragmentation adds three columns: gpu_frag, the
// fragmented GPU capacity over the whole, gpu_frag_ratio, over the
// unallocated capacity, and gpu_demand, the GPU requests of the pods
// arrived so far over the capacity.
func (r *Report) WriteSeries(w io.Writer) error {
	cw := csv.NewWriter(w)
	withFrag := r.Allocation != nil && r.Allocation.Frag != nil
	if withFrag {
		cw.Write(append(slices.Clone(seriesColumns), "gpu_frag", "gpu_frag_ratio", "gpu_demand"))
	} else {
		cw.Write(seriesColumns)
	}
	i, j := 0, 0
	var q Sample
	var a AllocSample
	var last []string
	for i < len(r.Series) || j < len(r.Alloc) {
		var t time.Duration
		switch {
		case j >= len(r.Alloc) || i < len(r.Series) && r.Series[i].T < r.Alloc[j].T:
			t = r.Series[i].T
		default:
			t = r.Alloc[j].T
		}
		for i < len(r.Series) && r.Series[i].T == t {
			q = r.Series[i]
			i++
		}
		for j < len(r.Alloc) && r.Alloc[j].T == t {
			a = r.Alloc[j]
			j++
		}
		c := q.Counts
		row := []string{ftoa(t.Seconds()), strconv.Itoa(c.Active), strconv.Itoa(c.Backoff), strconv.Itoa(c.Unschedulable),
			strconv.Itoa(c.Gated), strconv.Itoa(c.InFlight), ftoa(a.CPU), ftoa(a.Mem), ftoa(a.GPU)}
		if withFrag {
			row = append(row, ftoa(a.Frag), ftoa(a.FragRatio), ftoa(a.Demand))
		}
		if last != nil && slices.Equal(row[1:], last[1:]) {
			continue // a new peak within an instant, not a new level
		}
		cw.Write(row)
		last = row
	}
	cw.Flush()
	return cw.Error()
}
