package schedq

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"
)

func pendingKeys(p PendingPage[string]) []string {
	var keys []string
	for _, it := range p.Items {
		keys = append(keys, it.Key)
	}
	return keys
}

// TestPendingListing: activeQ in pop order, then backoffQ, then parked;
// filtered by tenant or by Match, and paged.
func TestPendingListing(t *testing.T) {
	h := newHarness(t, fairBy(nil))
	h.add(lj("park", 9, "b"), lj("err", 8, "a"))
	h.attemptFail("park", "Quiet")
	h.attemptFail("err")
	h.add(lj("a1", 0, "a"), lj("a2", 0, "a"), lj("a3", 0, "a"), lj("b1", 0, "b"), lj("b2", 0, "b"))
	all := h.c.Pending(PendingOptions[job]{}, h.now)
	// b used one pop ("park"), a one ("err"): a1 first by arrival.
	if want := []string{"a1", "b1", "a2", "b2", "a3", "err", "park"}; !slices.Equal(pendingKeys(all), want) || all.Total != 7 {
		t.Fatalf("listing %v (total %d), want %v", pendingKeys(all), all.Total, want)
	}
	if r := all.Items[5].Reason; r == "" || all.Items[5].Location != InBackoff || all.Items[5].Position != nil {
		t.Errorf("backing-off item listed as %+v", all.Items[5])
	}
	cases := []struct {
		name string
		o    PendingOptions[job]
		want []string
		rank int
	}{
		{"tenant", PendingOptions[job]{Tenant: "b"}, []string{"b1", "b2", "park"}, 0},
		{"match", PendingOptions[job]{Match: func(p job) bool { return p.prio == 0 }}, []string{"a1", "b1", "a2", "b2", "a3"}, 0},
		{"page", PendingOptions[job]{Offset: 2, Limit: 2}, []string{"a2", "b2"}, 2},
		{"tenant page", PendingOptions[job]{Tenant: "a", Offset: 1, Limit: 1}, []string{"a2"}, 1},
		{"past the end", PendingOptions[job]{Offset: 9}, nil, 0},
	}
	for _, tc := range cases {
		p := h.c.Pending(tc.o, h.now)
		if !slices.Equal(pendingKeys(p), tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, pendingKeys(p), tc.want)
		}
		if len(p.Items) > 0 && p.Items[0].Rank != tc.rank {
			t.Errorf("%s: first rank %d, want %d", tc.name, p.Items[0].Rank, tc.rank)
		}
	}
	// Ahead counts all of activeQ, whatever the filter.
	if p := h.c.Pending(PendingOptions[job]{Tenant: "b"}, h.now); p.Items[1].Position.Ahead != 3 {
		t.Errorf("b2: %d ahead, want 3", p.Items[1].Position.Ahead)
	}
}

// TestQueuePending: the locked Queue lists as Core does.
func TestQueuePending(t *testing.T) {
	clock := &manualClock{now: t0, waiting: make(chan struct{}, 16)}
	cfg := testConfig()
	cfg.Clock = clock
	q, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []job{mk("x", 1), mk("y", 5), mk("z", 3)} {
		q.Add(p)
		clock.Step(time.Millisecond)
	}
	if got := pendingKeys(q.Pending(PendingOptions[job]{})); !slices.Equal(got, []string{"y", "z", "x"}) {
		t.Errorf("Queue.Pending: %v", got)
	}
}

// TestPendingItemJSON: a listed item's JSON gives its rank and, in
// activeQ, the position the listing knows ({"ahead": N}), not the
// queue-wide counts it leaves at zero ("active": 0 with items in
// activeQ would be false); an item elsewhere has no position.
func TestPendingItemJSON(t *testing.T) {
	h := newHarness(t, fairBy(nil))
	h.add(lj("err", 8, "a"))
	h.attemptFail("err")
	h.add(lj("a1", 0, "a"), lj("a2", 0, "a"))
	p := h.c.Pending(PendingOptions[job]{}, h.now)
	var got []map[string]any
	for _, it := range p.Items {
		b, err := json.Marshal(it)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		got = append(got, m)
	}
	for i, want := range []map[string]any{{"ahead": 0.0}, {"ahead": 1.0}} {
		if pos := got[i]["position"]; !reflect.DeepEqual(pos, want) || got[i]["rank"] != float64(i) || got[i]["key"] == nil {
			t.Errorf("item %d: %v, want rank %d and position %v", i, got[i], i, want)
		}
	}
	if _, ok := got[2]["position"]; ok || got[2]["key"] != "err" {
		t.Errorf("the item backing off: %v, want no position", got[2])
	}
}

// TestPendingItemsAreTheCallers: a caller that writes into a listed
// item's lists changes its copy, not the queue: neither the item's own
// Status nor that of items rejected alike, which share one list with it
// inside the queue.
func TestPendingItemsAreTheCallers(t *testing.T) {
	cases := []struct {
		name    string
		failure Failure
		list    func(s Status) []string
	}{
		{"RejectedBy", Failure{RejectedBy: []string{"Fit", "Affinity"}}, func(s Status) []string { return s.RejectedBy }},
		{"WaitingOn", Failure{WaitingOn: []string{"Volume"}}, func(s Status) []string { return s.WaitingOn }},
		{"Reasons", Failure{RejectedBy: []string{"Fit"}, Reasons: []string{"no room", "no GPU"}}, func(s Status) []string { return s.Reasons }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.add(mk("a", 2), mk("b", 1))
			h.popName()
			h.popName()
			h.failWith("a", tc.failure)
			h.failWith("b", tc.failure)
			want := slices.Clone(tc.list(h.info("a").Status))
			if len(want) == 0 {
				t.Fatalf("the failure left no list to write to")
			}
			p := h.c.Pending(PendingOptions[job]{}, h.now)
			if len(p.Items) != 2 {
				t.Fatalf("listed %v, want a and b", pendingKeys(p))
			}
			for _, it := range p.Items {
				l := tc.list(it.Status)
				for i := range l {
					l[i] = "written by the caller"
				}
			}
			for _, name := range []string{"a", "b"} {
				if got := tc.list(h.info(name).Status); !slices.Equal(got, want) {
					t.Errorf("%s's %s in the queue is %q after the caller wrote to its listing, want %q", name, tc.name, got, want)
				}
			}
			h.check()
		})
	}
}

// TestPendingUnexplained: an unexplained listing holds each item's rank,
// key, place, tenant and place in activeQ, and no explanation;
// ExplainListed then explains the items as Pending would have, each
// where it is now: an item deleted since says it left and keeps its
// tenant (a filter by tenant of the listing still finds it), one popped
// and failed since is explained where it is, with the listing's rank and
// no place in activeQ, and one still there keeps the listing's place.
func TestPendingUnexplained(t *testing.T) {
	h := newHarness(t, fairBy(nil))
	h.add(lj("park", 9, "b"))
	h.attemptFail("park", "Quiet")
	h.add(lj("a1", 0, "a"), lj("a2", 0, "a"), lj("b1", 0, "b"))
	o := PendingOptions[job]{Limit: 10}
	explained := h.c.Pending(o, h.now)
	o.Unexplained = true
	list := h.c.Pending(o, h.now)
	if !slices.Equal(pendingKeys(list), pendingKeys(explained)) || list.Total != explained.Total {
		t.Fatalf("unexplained listing %v, want %v", pendingKeys(list), pendingKeys(explained))
	}
	for i, it := range list.Items {
		want := explained.Items[i]
		if it.Reason != "" || it.Rank != want.Rank || it.Location != want.Location || it.Tenant != want.Tenant || !reflect.DeepEqual(it.Position, want.Position) {
			t.Errorf("%s listed as %+v, want rank %d, %v, tenant %q, position %+v, no reason", it.Key, it, want.Rank, want.Location, want.Tenant, want.Position)
		}
	}
	// As Pending explains them, before anything changed.
	same := slices.Clone(list.Items)
	h.c.ExplainListed(same, h.now)
	if !reflect.DeepEqual(same, explained.Items) {
		t.Errorf("explained after the listing:\n%+v\nwant\n%+v", same, explained.Items)
	}
	// a1 (first in activeQ) is deleted, a2 popped and failed.
	if err := h.c.Delete("a1", h.now); err != nil {
		t.Fatal(err)
	}
	h.attemptFail("a2", "Quiet")
	later := slices.Clone(list.Items)
	h.c.ExplainListed(later, h.now)
	byKey := map[string]PendingItem[string]{}
	for _, it := range later {
		byKey[it.Key] = it
	}
	for _, tc := range []struct {
		name, key string
		where     Location
		tenant    string
		left      bool
	}{
		{name: "deleted", key: "a1", tenant: "a", left: true},
		{name: "failed since", key: "a2", where: InUnschedulable, tenant: "a"},
		{name: "unchanged", key: "b1", where: InActive, tenant: "b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it, listed := byKey[tc.key], list.Items[slices.IndexFunc(list.Items, func(it PendingItem[string]) bool { return it.Key == tc.key })]
			if it.Location != tc.where || it.Tenant != tc.tenant || (it.Reason == leftSinceListed) != tc.left || it.Rank != listed.Rank {
				t.Errorf("%+v, want at %v, tenant %q, left %v, rank %d", it, tc.where, tc.tenant, tc.left, listed.Rank)
			}
			if want := listed.Position; (tc.where == InActive) != (it.Position != nil) || (it.Position != nil && *it.Position != *want) {
				t.Errorf("position %+v, want the listing's %+v while in activeQ, else none", it.Position, want)
			}
		})
	}
}
