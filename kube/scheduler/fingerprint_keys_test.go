package scheduler

import (
	"maps"
	"slices"
	"strconv"
	"testing"
)

// TestSortedKeys: the keys of maps below, at and above the buffer's size
// come out sorted, each once, as slices.Sorted gives them, so the hashes
// of labels and resource lists do not depend on the map's order.
func TestSortedKeys(t *testing.T) {
	for n := range 13 {
		m := map[string]string{}
		for i := range n {
			m["k"+strconv.Itoa((i*7)%13)] = "v"
		}
		got := sortedKeys(m, &[8]string{})
		if want := slices.Sorted(maps.Keys(m)); !slices.Equal(got, want) {
			t.Errorf("%d keys: %v, want %v", n, got, want)
		}
	}
}
