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

// has reports whether class is in s. O(1) once the set uses its map,
// O(k) for k classes before.
func (s *classSet) has(class uint64) bool {
	if s.big {
		_, ok := s.many[class]
		return ok
	}
	return slices.Contains(s.few, class)
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

// hintMemo remembers, for one move request, the hints' answers by
// registration and class (Config.HintClass): items of one class get the
// same answer from a hint, so the first item of a class asks and the
// others read. It is direct-mapped, with memoSlots slots: a collision
// forgets the older answer (the hint runs again), so a request with many
// classes costs a hint call per item, as without a memo, and never more
// memory. Answers are valid for the request's generation only, so
// starting a request is O(1) (O(memoSlots) when the counter wraps).
type hintMemo struct {
	active bool
	gen    uint32
	slots  [memoSlots]memoSlot
}

// The memo's size: memoSlots slots, a power of two. 256 keeps the
// answers of a few dozen classes with few collisions (a direct-mapped
// table of k classes in s slots loses about k²/2s of them), in 6 KB.
const (
	memoBits  = 8
	memoSlots = 1 << memoBits
)

// memoSlot is one remembered answer: whether the hint of registration
// reg skipped items of class, in generation gen.
type memoSlot struct {
	gen   uint32
	reg   int32
	class uint64
	skip  bool
}

// start begins a move request's generation.
func (m *hintMemo) start() {
	m.gen++
	if m.gen == 0 {
		m.slots = [memoSlots]memoSlot{}
		m.gen = 1
	}
	m.active = true
}

// stop ends the move request: until the next start, nothing is read or
// remembered.
func (m *hintMemo) stop() { m.active = false }

// slot returns the slot for registration reg and class, or nil if the
// memo is not in use. O(1).
func (m *hintMemo) slot(reg int32, class uint64) *memoSlot {
	if !m.active {
		return nil
	}
	h := (class ^ uint64(reg)*0x9e3779b97f4a7c15) * 0xbf58476d1ce4e5b9
	return &m.slots[h>>(64-memoBits)]
}

func (s *memoSlot) valid(gen uint32, reg int32, class uint64) bool {
	return s.gen == gen && s.reg == reg && s.class == class
}

func (s *memoSlot) set(gen uint32, reg int32, class uint64, skip bool) {
	*s = memoSlot{gen: gen, reg: reg, class: class, skip: skip}
}
