package gang

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A gang of 8 that fits binds all 8.
func TestGangOf8ThatFitsBindsAll(t *testing.T) {
	c := setup(t)
	ns := namespace(t, c)
	logs := startScheduler(t, "schedq-gang-fits")
	if !strings.Contains(logs.String(), "watching PodGroups: gang scheduling is on") {
		t.Fatalf("the scheduler did not find PodGroups:\n%s", logs.String())
	}
	makeNodes(t, c, "gang-fits", 4, "2")
	makePodGroup(t, c, ns, "train", 8)
	names := makeMembers(t, c, ns, "schedq-gang-fits", "train", "train", 8, "1")
	took := waitBound(t, c, ns, names, time.Minute)
	figure(t, "a gang of 8 on 4 nodes: all 8 bound %v after the last member was created", took.Round(time.Millisecond))
}

// A gang of 8 where only 6 fit binds none; a node added later binds all 8.
func TestGangOf8WhereOnly6FitBindsNoneThenAll(t *testing.T) {
	c := setup(t)
	ns := namespace(t, c)
	startScheduler(t, "schedq-gang-6")
	makeNodes(t, c, "gang-six", 3, "2")
	makePodGroup(t, c, ns, "train", 8)
	names := makeMembers(t, c, ns, "schedq-gang-6", "train", "train", 8, "1")
	// Every member is reported with the gang's reason: the attempt ran.
	waitFor(t, time.Minute, "all 8 members reported unschedulable as a gang", func(context.Context) (bool, error) {
		for _, n := range names {
			if !strings.Contains(conditionMessage(t, c, ns, n), "6 of 8 members fit") {
				return false, nil
			}
		}
		return true, nil
	})
	if n := boundCount(t, c, ns, names); n != 0 {
		t.Fatalf("%d of the gang's 8 members bound, want none", n)
	}
	added := time.Now()
	makeNodes(t, c, "gang-six-late", 1, "2")
	waitBound(t, c, ns, names, time.Minute)
	figure(t, "6 of 8 fit: 0 bound; a node added later: all 8 bound %v after it was created", time.Since(added).Round(time.Millisecond))
}

// A member created before its PodGroup waits, and is reported; it
// schedules when the PodGroup is created.
func TestMemberBeforeItsPodGroupWaits(t *testing.T) {
	c := setup(t)
	ns := namespace(t, c)
	startScheduler(t, "schedq-gang-late")
	makeNodes(t, c, "gang-late", 2, "4")
	names := makeMembers(t, c, ns, "schedq-gang-late", "late", "late", 4, "1")
	waitFor(t, time.Minute, "a WaitingForPodGroup event on each member", func(context.Context) (bool, error) {
		for _, n := range names {
			if !eventWith(t, c, ns, n, "WaitingForPodGroup") {
				return false, nil
			}
		}
		return true, nil
	})
	if n := boundCount(t, c, ns, names); n != 0 {
		t.Fatalf("%d members bound before their PodGroup existed", n)
	}
	created := time.Now()
	makePodGroup(t, c, ns, "late", 4)
	waitBound(t, c, ns, names, time.Minute)
	figure(t, "4 members waited for their PodGroup; all bound %v after it was created", time.Since(created).Round(time.Millisecond))
}
