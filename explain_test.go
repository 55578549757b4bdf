package schedq

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestExplain(t *testing.T) {
	h := newHarness(t)
	h.add(mk("active", 1), mk("backoff", 2), mk("parked", 3), mk("flight", 4), job{name: "gated", gated: true})
	h.step(time.Second)
	h.attemptFail("flight") // error: backoff ... then re-pop below
	h.step(time.Minute)
	h.c.flushBackoff(h.now)
	h.attemptFail("flight", "Fit")
	h.attemptFail("parked", "Fit", "Affinity")
	h.attemptFail("backoff")
	h.c.Activate([]string{"flight"}, h.now)
	h.pop() // flight is in flight again

	tests := []struct {
		key    string
		loc    Location
		reason string
		check  func(t *testing.T, x Explanation[string])
	}{
		{"active", InActive, "ready", nil},
		{"flight", InFlight, "being tried now", func(t *testing.T, x Explanation[string]) {
			if x.Attempts != 3 {
				t.Errorf("attempts %d", x.Attempts)
			}
		}},
		{"backoff", InBackoff, "backing off after 1 failed attempt(s) (failed with an error)", func(t *testing.T, x Explanation[string]) {
			if !x.BackoffExpiry.Equal(h.now.Add(time.Second)) {
				t.Errorf("backoff expiry %v", x.BackoffExpiry)
			}
		}},
		{"parked", InUnschedulable, "rejected by Fit, Affinity", func(t *testing.T, x Explanation[string]) {
			want := []string{"Affinity:PlacedAdd", "Affinity:ItemRelabel", "Fit:MachineAdd", "Fit:MachineTaint"}
			if !slices.Equal(x.WakingEvents, want) {
				t.Errorf("waking events %q, want %q", x.WakingEvents, want)
			}
			if !x.LeftoverFlushAt.Equal(h.now.Add(defaultMaxInUnschedulable)) {
				t.Errorf("leftover flush at %v", x.LeftoverFlushAt)
			}
			if !x.Since.Equal(h.now) {
				t.Errorf("since %v, want %v", x.Since, h.now)
			}
		}},
		{"gated", InGated, "gated by Gate; waiting for Gate:ItemUngated", func(t *testing.T, x Explanation[string]) {
			if !x.Since.Equal(t0) {
				t.Errorf("since %v, want %v", x.Since, t0)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			x, err := h.c.Explain(tc.key, h.now)
			if err != nil {
				t.Fatal(err)
			}
			if x.Location != tc.loc || !strings.Contains(x.Reason, tc.reason) {
				t.Fatalf("location %v, reason %q; want %v, %q", x.Location, x.Reason, tc.loc, tc.reason)
			}
			if tc.check != nil {
				tc.check(t, x)
			}
			text := x.String()
			if !strings.Contains(text, "item:") || !strings.Contains(text, tc.key) || !strings.Contains(text, x.Reason) {
				t.Fatalf("text rendering:\n%s", text)
			}
			js, err := json.Marshal(x)
			if err != nil {
				t.Fatal(err)
			}
			var back map[string]any
			if err := json.Unmarshal(js, &back); err != nil {
				t.Fatal(err)
			}
			if back["location"] != tc.loc.String() || back["key"] != tc.key {
				t.Fatalf("json %s", js)
			}
		})
	}
	if _, err := h.c.Explain("nobody", h.now); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "nobody") {
		t.Fatalf("unknown key: %v", err)
	}
}

func TestDump(t *testing.T) {
	h := newHarness(t)
	h.add(mk("a", 1), mk("b", 2), mk("c", 3), job{name: "g", gated: true})
	h.attemptFail("c", "Fit")
	h.attemptFail("b")
	h.pop()
	d := h.c.Dump(h.now)
	got := map[Location]int{}
	for _, s := range d.Summary {
		got[s.Location] = s.Count
	}
	want := map[Location]int{InActive: 0, InBackoff: 1, InUnschedulable: 1, InGated: 1, InFlight: 1}
	for loc, n := range want {
		if got[loc] != n {
			t.Errorf("%v: %d, want %d", loc, got[loc], n)
		}
	}
	if len(d.Items) != 4 {
		t.Fatalf("%d items", len(d.Items))
	}
	for _, s := range d.Summary {
		if s.Location == InUnschedulable && s.ByCheck["Fit"] != 1 {
			t.Errorf("by plugin %v", s.ByCheck)
		}
	}
	text := d.String()
	for _, s := range []string{"unschedulable", "gated", "c: unschedulable: rejected by Fit"} {
		if !strings.Contains(text, s) {
			t.Errorf("dump text lacks %q:\n%s", s, text)
		}
	}
	if _, err := json.Marshal(d); err != nil {
		t.Fatal(err)
	}
}

// TestExplainCarriesTheFailureMessage: the scheduler's words for the last
// failure reach Explain, so that "why is it pending" has the reason.
func TestExplainCarriesTheFailureMessage(t *testing.T) {
	h := newHarness(t)
	h.add(mk("a", 1))
	h.failWith(h.popName(), Failure{RejectedBy: []string{"Fit"}, Message: "request overflows"})
	x, err := h.c.Explain("a", h.now)
	if err != nil || x.Message != "request overflows" || !strings.Contains(x.String(), "last failure:          request overflows") {
		t.Fatalf("explanation %+v (%v)\n%s", x, err, x)
	}
}

// TestReasonsAsData: a failure's reasons reach Info and Explain as given,
// for a lone item, a parked item and a group, and a later failure replaces
// them.
func TestReasonsAsData(t *testing.T) {
	h := newHarness(t, groupsOn)
	h.add(mk("a", 1))
	h.pop()
	h.failWith("a", Failure{RejectedBy: []string{"Fit"}, Reasons: []string{"Insufficient cpu", "Insufficient memory"}, Message: "0/2 fit"})
	want := []string{"Insufficient cpu", "Insufficient memory"}
	if info, _, _ := h.c.Get("a"); !slices.Equal(info.Reasons, want) {
		t.Fatalf("Info.Reasons %q, want %q", info.Reasons, want)
	}
	if x, err := h.c.Explain("a", h.now); err != nil || !slices.Equal(x.Reasons, want) {
		t.Fatalf("Explanation.Reasons %q (%v), want %q", x.Reasons, err, want)
	}
	if err := h.c.Park(mk("b", 1), Failure{RejectedBy: []string{"Fit"}, Reasons: []string{"Too many pods"}}, h.now); err != nil {
		t.Fatal(err)
	}
	if x, _ := h.c.Explain("b", h.now); !slices.Equal(x.Reasons, []string{"Too many pods"}) {
		t.Fatalf("parked: Reasons %q", x.Reasons)
	}
	h.setGroup("g", 1, 0)
	h.add(gm("g", "m", 0))
	h.requeueGroup(h.popGroup("g"), Failure{RejectedBy: []string{"Fit"}, Reasons: []string{"Insufficient gpu"}})
	if x, _ := h.c.Explain("m", h.now); !slices.Equal(x.Reasons, []string{"Insufficient gpu"}) {
		t.Fatalf("group member: Reasons %q", x.Reasons)
	}
	h.c.Activate([]string{"a"}, h.now)
	h.pop()
	h.failWith("a", Failure{})
	if info, _, _ := h.c.Get("a"); info.Reasons != nil {
		t.Fatalf("an error kept the old reasons %q", info.Reasons)
	}
}

// TestExplanationKeyType: Explanation carries the item's own key type, and
// its JSON writes the key as text, whatever the type; a PendingItem keeps
// its rank beside it.
func TestExplanationKeyType(t *testing.T) {
	type nsName struct{ ns, name string }
	c, err := NewCore(Config[nsName, nsName]{Key: func(k nsName) nsName { return k }, Priority: func(nsName) int32 { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	k := nsName{"default", "web"}
	c.Add(k, t0)
	x, err := c.Explain(k, t0)
	if err != nil || x.Key != k {
		t.Fatalf("Explain key %v (%v), want %v", x.Key, err, k)
	}
	js, err := json.Marshal(x)
	if err != nil || !strings.Contains(string(js), `"key":"{default web}"`) || strings.Count(string(js), `"key"`) != 1 {
		t.Fatalf("json %s (%v)", js, err)
	}
	p := c.Pending(PendingOptions[nsName]{}, t0)
	js, err = json.Marshal(p)
	if err != nil || !strings.Contains(string(js), `"items":[{"rank":0,"key":"{default web}"`) {
		t.Fatalf("pending json %s (%v)", js, err)
	}
	if d := c.Dump(t0); len(d.Items) != 1 || d.Items[0].Key != k {
		t.Fatalf("dump %+v", d.Items)
	}
}

// TestExplainWakingEvents: a parked item's waking events are those
// registered by every check holding it back, rejecting or pending, once
// each and in the registrations' order, an unlabelled event named by its
// kind and action; none for a check registered for nothing.
func TestExplainWakingEvents(t *testing.T) {
	twice := func(cfg *Config[string, job]) { // Fit registers MachineAdd a second time
		hints := map[string][]EventHint[job]{}
		for p, hs := range cfg.Hints {
			hints[p] = slices.Clone(hs)
		}
		hints["Fit"] = append(hints["Fit"], EventHint[job]{Event: evMachineAdd, Fn: fitHint})
		cfg.Hints = hints
	}
	tests := []struct {
		name    string
		mutate  []func(*Config[string, job])
		failure Failure
		want    []string
		reason  string
	}{
		{"rejected", nil, Failure{RejectedBy: []string{"Fit"}}, []string{"Fit:MachineAdd", "Fit:MachineTaint"}, "rejected by Fit; waiting for Fit:MachineAdd or Fit:MachineTaint"},
		{"rejected and pending, unlabelled", nil, Failure{RejectedBy: []string{"Fit"}, WaitingOn: []string{"Volume"}},
			[]string{"Fit:MachineAdd", "Fit:MachineTaint", "Volume:" + evVolumeAdd.label()}, "rejected by Fit, Volume; waiting for"},
		{"registered for nothing", nil, Failure{RejectedBy: []string{"Quiet"}}, nil, "waiting for no registered event"},
		{"registered twice", []func(*Config[string, job]){twice}, Failure{RejectedBy: []string{"Fit"}}, []string{"Fit:MachineAdd", "Fit:MachineTaint"}, "rejected by Fit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.mutate...)
			h.add(mk("a", 1))
			h.popName()
			h.failWith("a", tc.failure)
			x, err := h.c.Explain("a", h.now)
			if err != nil {
				t.Fatal(err)
			}
			if x.Location != InUnschedulable {
				t.Fatalf("a is %v, want parked", x.Location)
			}
			if !slices.Equal(x.WakingEvents, tc.want) || !strings.Contains(x.Reason, tc.reason) {
				t.Errorf("waking events %q, reason %q; want %q, %q", x.WakingEvents, x.Reason, tc.want, tc.reason)
			}
		})
	}
}
