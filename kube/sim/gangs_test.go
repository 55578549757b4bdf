package sim

import (
	"strings"
	"testing"
)

// TestGangSchedulingScenario checks what the built-in scenario is there to
// show: every gang placed whole, none ever partly, lone pods bound while
// gangs wait, and the queue's invariants hold throughout.
func TestGangSchedulingScenario(t *testing.T) {
	r, err := Run(load(t, "GangScheduling"), Options{CheckInvariants: true})
	if err != nil {
		t.Fatal(err)
	}
	g := r.Gangs
	if g == nil || g.Gangs != 13 || g.Placed != 13 || g.PartlyPlaced != 0 || g.Waiting != 0 {
		t.Fatalf("gangs %+v", g)
	}
	if g.SinglesBoundWhileGangsWaited == 0 {
		t.Fatal("no lone pod was bound while a gang waited: the waiting gangs blocked them")
	}
	for _, gs := range g.PerGang {
		if gs.Bound != gs.Size || gs.Attempts == 0 || gs.TimeToSchedule < 0 {
			t.Errorf("gang %+v", gs)
		}
	}
}

// TestGangsOffPlacesGangsPartly: the same pods scheduled one by one leave
// gangs partly placed, which the report counts (and which PodGroups
// prevent, see above).
func TestGangsOffPlacesGangsPartly(t *testing.T) {
	sc := load(t, "GangScheduling")
	if err := sc.Set("gangs", "false"); err != nil {
		t.Fatal(err)
	}
	r := run(t, sc)
	if r.Gangs == nil || r.Gangs.PartlyPlaced == 0 {
		t.Fatalf("gangs %+v", r.Gangs)
	}
}

// TestGangTooBigWaitsWithoutBlocking: a gang larger than the cluster is
// never partly placed and lone pods behind it are all bound.
func TestGangTooBigWaitsWithoutBlocking(t *testing.T) {
	sc, err := Parse([]byte(`
name: TooBig
nodes:
  - {name: n, count: 2, capacity: {cpu: "4", memory: 16Gi}}
pods:
  - {name: big, count: 4, requests: {cpu: "3"}, gang: {size: 4}}
  - {name: lone, count: 4, requests: {cpu: "1"}, arrival: {at: 1s}}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, sc)
	if r.Gangs.Waiting != 1 || r.Gangs.PartlyPlaced != 0 || r.Scheduled != 4 {
		t.Fatalf("scheduled %d, gangs %+v", r.Scheduled, r.Gangs)
	}
	if len(r.PendingReasons) != 1 || !strings.Contains(r.PendingReasons[0].Label, "group default/big-g0: 2 of 4 members fit") {
		t.Fatalf("pending reasons %+v", r.PendingReasons)
	}
}

func TestGangSpecValidation(t *testing.T) {
	for _, tc := range []struct{ gang, want string }{
		{"{size: 0}", "pods[0].gang.size: must be at least 1"},
		{"{size: 4, minCount: 5}", "pods[0].gang.minCount: must be between 1 and size (4), got 5"},
		{"{size: 4, minCount: -1}", "pods[0].gang.minCount"},
		{"{size: 3, minCount: 2}", "pods[0].gang.minCount: 2 is more than the 1 members of the last gang (count 4 in gangs of 3): make count a multiple of size, or minCount at most 1"},
	} {
		_, err := Parse([]byte("name: x\nnodes: [{name: n, count: 1}]\npods: [{name: p, count: 4, gang: " + tc.gang + "}]\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("gang %s: %v, want %q", tc.gang, err, tc.want)
		}
	}
	sc := load(t, "GangScheduling")
	if err := sc.Set("gangs", "maybe"); err == nil || !strings.Contains(err.Error(), `gangs: "maybe" is not true or false`) {
		t.Errorf("Set gangs=maybe: %v", err)
	}
}
