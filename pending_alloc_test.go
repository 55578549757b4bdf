package schedq

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// TestUnexplainedListingSizedOnce: a page of the listing is allocated
// once, at its size, and its items' positions in activeQ once: a
// listing of the whole order (PendingOptions.Unexplained, a forecast's
// copy of the queue, /debug/queue?order=pop's) allocated a position per
// item and, grown by appends, copied its items (392 bytes each) about
// twice over, under the queue's lock.
func TestUnexplainedListingSizedOnce(t *testing.T) {
	type item struct{ name string }
	c, err := NewCore(Config[string, item]{Key: func(i item) string { return i.name }, Priority: func(item) int32 { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1e9, 0)
	for i := range 5000 {
		c.Add(item{fmt.Sprintf("p-%d", i)}, now)
	}
	for _, tc := range []struct {
		name string
		o    PendingOptions[item]
		want int
	}{
		{name: "the whole order", o: PendingOptions[item]{Limit: math.MaxInt, Unexplained: true}, want: 5000},
		{name: "a page", o: PendingOptions[item]{Offset: 100, Limit: 1000, Unexplained: true}, want: 1000},
		{name: "the last page", o: PendingOptions[item]{Offset: 4500, Limit: 1000, Unexplained: true}, want: 500},
		{name: "past the end", o: PendingOptions[item]{Offset: 6000, Limit: 1000, Unexplained: true}, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := c.snapshot(tc.o, now)
			s.sort()
			var p PendingPage[string]
			allocs := testing.AllocsPerRun(3, func() { p = c.page(s, tc.o, now) })
			if len(p.Items) != tc.want || allocs > 2 {
				t.Errorf("%d items in %v allocations, want %d in two at most (the items, their positions)", len(p.Items), allocs, tc.want)
			}
		})
	}
}
