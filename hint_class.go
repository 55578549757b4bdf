package schedq

import "slices"

// classSet is the set of hint classes (Config.HintClass) already asked
// about in one group, for one event. It scans a slice while the set is
// small, as it is for a group of alike members, and moves to a map when
// it grows, so that a group of m members of distinct classes costs O(m),
// not O(m²). It allocates nothing once warm.
type classSet struct {
	few  []uint64
	many map[uint64]struct{}
	big  bool
}

// classSetSmall is how many classes classSet scans before it uses a map.
const classSetSmall = 16

// reset empties s. O(1) while it is small, O(k) for k classes after.
func (s *classSet) reset() {
	s.few = s.few[:0]
	if s.big {
		clear(s.many)
		s.big = false
	}
}

// first adds class to s and reports whether it was new. O(1) amortized
// once the set uses its map, O(k) for k classes before.
func (s *classSet) first(class uint64) bool {
	if s.big {
		if _, ok := s.many[class]; ok {
			return false
		}
		s.many[class] = struct{}{}
		return true
	}
	if slices.Contains(s.few, class) {
		return false
	}
	if len(s.few) < classSetSmall {
		s.few = append(s.few, class)
		return true
	}
	if s.many == nil {
		s.many = make(map[uint64]struct{}, 2*classSetSmall)
	}
	for _, k := range s.few {
		s.many[k] = struct{}{}
	}
	s.many[class] = struct{}{}
	s.big = true
	return true
}
