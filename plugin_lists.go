package schedq

import "slices"

// pluginLists shares the items' lists of checks (RejectedBy, WaitingOn):
// items rejected by the same checks hold one copy of the
// list, so that a move request, which compares each candidate's lists
// with the last one's (heldBy), finds most equal by their address,
// without reading them. The queue never changes a list in place, and the
// lists it hands out are clipped, so an append by a reader copies.
type pluginLists struct {
	byKey map[string][]string
	buf   []byte // scratch for a list's key
}

// maxPluginLists bounds the lists kept: beyond it, a new list is a copy
// of its own, as without sharing.
const maxPluginLists = 1024

// of returns a list equal to src that the queue owns: nil for nil, the
// shared copy if one is kept. O(len(src)); a list already kept costs no
// allocation (its key is built in a scratch buffer).
func (l *pluginLists) of(src []string) []string {
	if len(src) == 0 {
		return slices.Clone(src)
	}
	key := l.buf[:0]
	for i, p := range src {
		if i > 0 {
			key = append(key, 0)
		}
		key = append(key, p...)
	}
	l.buf = key
	if s, ok := l.byKey[string(key)]; ok {
		return s
	}
	s := slices.Clip(slices.Clone(src))
	if len(l.byKey) < maxPluginLists {
		if l.byKey == nil {
			l.byKey = map[string][]string{}
		}
		l.byKey[string(key)] = s
	}
	return s
}

// sameList reports whether cur equals want, a copy of last: at once if
// shared is true and cur is last's array, else element by element.
func sameList(cur, last, want []string, shared bool) bool {
	if len(cur) != len(want) {
		return false
	}
	if len(cur) == 0 || shared && len(last) == len(cur) && &cur[0] == &last[0] {
		return true
	}
	return slices.Equal(cur, want)
}
