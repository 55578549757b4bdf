package sim

import (
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/schedq/schedq/kube/gpu"
)

// draNodeMemoOn turns gpuDRAScore's memo of rebuilt nodes on; tests turn
// it off to check that the memo changes no placement.
var draNodeMemoOn = true

// draNodeMemoMax bounds the nodes whose rebuilt GPUs are kept: past it
// (nodes that came and went under many names), the memo starts afresh.
const draNodeMemoMax = 1 << 16

// draNodeMemo keeps, per node, the GPUs draNode rebuilt for it and
// everything that rebuild read: the node's allocatable and requested CPU,
// memory and GPUs and its model, the pod objects on it in order, which of
// them were left out (skip), and each claim looked up with what the
// lookup returned (or, for the claims, the count of their events on the
// node's pool, claimCounter). draNode is a function of those alone (a pod object and
// a claim object are never changed in place), so while a node has the
// same ones the kept GPUs are the ones a rebuild would give. Checking
// them costs a pointer comparison per pod and a claim lookup per GPU pod,
// instead of summing every pod's requests, looking its claims up and
// placing it again: in a loaded replay the score rebuilt every node it
// scored in every cycle, a fifth of the run's CPU.
//
// A NodeInfo's generation alone says the node is unchanged only outside
// a PodGroup's cycle, which assumes pods into the snapshot without a new
// one: there the requested CPU and memory and the pod list, which such a
// cycle changes, are compared themselves. Safe for concurrent use.
//
// A node's entry is held in its slot, found by the node object (a
// pointer, hashed as a word) rather than by the node's name (a string
// hashed, and compared with the key's bytes, in every score of every
// node, and once more for the claims' count by name); the slot also
// keeps the cell of the node's pool's claims' count, read without a
// look-up.
type draNodeMemo struct {
	mu sync.Mutex
	// nodes are the slots by node name; byObj the same slots by the node
	// object each was last found for. A node object is never changed in
	// place, so it names its node; a node updated (a new object) finds
	// its slot by name once, and the slot is keyed by the new object.
	nodes map[string]*draNodeSlot
	byObj map[*v1.Node]*draNodeSlot
	// held counts, per pod UID, the entries in slots that have a pod of
	// it (keep); absent is the last UID found in none (nowhere), while
	// absentOK (no entry kept since had a UID). The pod being scheduled,
	// which every node's entry is asked about in every cycle, is on no
	// node: one look-up per cycle tells every entry so, where each
	// entry's own set was asked (a small map scanned, its keys' bytes
	// compared: nearly a third of the score's CPU).
	held     map[types.UID]int32
	absent   types.UID
	absentOK bool
	// tables are the scores lendScore kept, by key (scoreKey.packed),
	// at most draScoreTablesMax keys, the least recently used dropped
	// first; each table's rows are by slot (ord) and name the entry
	// each score was kept for (its id, one per entry made: nextID). A
	// cycle scores one key on every node, so it reads one table's rows
	// in the order of the slots, where each entry's own map of scores
	// was one more cache miss per node scored (a tenth of the run's
	// CPU); the key's table is found once per key (key, table).
	tables  map[uint64]*scoreTable
	key     uint64
	table   *scoreTable
	hasKey  bool
	tick    uint64
	nextID  uint64
	nextOrd int
	// builds counts the rebuilds, byGen the nodes returned by their
	// generation alone, for tests.
	builds, byGen int
}

// draNodeSlot is one node's place in the memo: its entry (nil: none
// kept) with what the entry was last checked against, the node object
// the slot was last found by, and the cell of the claims' count of the
// node's pool (claimCounter's; nil: not read yet). What a score checks
// of a node whose entry holds by its generation is all here, with the
// entry's id: the entry itself, a cache miss per node scored, is read
// only when it does not hold, or to score it afresh.
type draNodeSlot struct {
	e  *draNodeEntry
	id uint64 // e's, 0 without one
	// gen is ni's generation when the entry was rebuilt or last found
	// to hold, if it then named ni's content (byGen: not in a PodGroup's
	// cycle).
	gen int64
	// events is the count of the claims' events on the node's pool
	// when the entry was rebuilt or last found to hold (counted: one
	// was given).
	events uint64
	// skip is the UID of the pods left out when the entry was rebuilt,
	// or one that leaves out the same; skipOn is e.uids[skip]: whether
	// the pod left out is on the node.
	skip                   types.UID
	byGen, counted, skipOn bool
	cell                   *claimCell
	// ord is the slot's row in the tables of scores.
	ord  int
	node *v1.Node
}

// scoreTable is the scores kept by one key: rows by slot, and the tick
// of its last use.
type scoreTable struct {
	rows []scoreRow
	used uint64
}

// scoreRow is a score kept for the entry of id (0: none).
type scoreRow struct {
	id    uint64
	score int64
}

// draNodeEntry is one node's rebuilt GPUs and what they were rebuilt from.
type draNodeEntry struct {
	head   nodeHead
	pods   []*v1.Pod
	claims []claimRead
	n      *gpu.Node
	// uids are the UIDs of pods, to tell whether a pod left out is on
	// the node (leavesOutAlike).
	uids map[types.UID]bool
	// id names the entry in the memo's tables of scores.
	id uint64
}

// leavesOutAlike reports whether leaving out skip instead of slot.skip
// leaves out the same pods of slot's entry: the same UID, or neither on
// the node (the pod being scheduled, which is on no node, differs from
// cycle to cycle). O(1).
//
// The UIDs are compared only when slot.skip is on the node: when it is
// not (skipOn, which is slot.e.uids[slot.skip]), the same UID is on no
// entry of the node either, and the answer is the same without the
// comparison, whose bytes were an earlier cycle's pod's, a cache miss per
// node scored (0.7% of the 130% draw's samples). nowhere compares skip
// with the UID it last found absent, the same string in a cycle.
func (m *draNodeMemo) leavesOutAlike(slot *draNodeSlot, skip types.UID) bool {
	if slot.skipOn {
		return skip == slot.skip
	}
	return m.nowhere(skip) || !slot.e.uids[skip]
}

// nowhere reports whether no entry in m's slots has a pod of UID uid.
// O(1).
func (m *draNodeMemo) nowhere(uid types.UID) bool {
	if m.absentOK && uid == m.absent {
		return true
	}
	if m.held[uid] > 0 {
		return false
	}
	m.absent, m.absentOK = uid, true
	return true
}

// keep puts e (nil: none) in slot in place of its entry, and counts
// their pods' UIDs in held. O(their pods).
func (m *draNodeMemo) keep(slot *draNodeSlot, e *draNodeEntry) {
	if old := slot.e; old != nil {
		for uid := range old.uids {
			if m.held[uid]--; m.held[uid] <= 0 {
				delete(m.held, uid)
			}
		}
	}
	slot.e, slot.id = e, 0
	if e == nil {
		return
	}
	slot.id = e.id
	for uid := range e.uids {
		m.held[uid]++
	}
	if len(e.uids) > 0 && draNodeHeldCheck {
		m.absentOK = false
	}
}

// draNodeHeldCheck turns on keep's forgetting of the UID last found on
// no node once an entry with pods is kept; tests turn it off to show
// what it guards against.
var draNodeHeldCheck = true

// nodeHead is a nodeIn without its pods: what draNode reads of the node
// itself.
type nodeHead struct {
	name, model        string
	cpu, mem, gpuMilli int64
	usedCPU, usedMem   int64
}

// claimRead is one claim lookup and its result: the claim object, or
// failed.
type claimRead struct {
	namespace, name string
	claim           *resourceapi.ResourceClaim
	failed          bool
}

// claimGetter looks a claim up, as the DRA manager's claim tracker does.
type claimGetter func(namespace, name string) (*resourceapi.ResourceClaim, error)

// claimCounter gives the number of the claims' events on a pool
// (allocKeeper.claimCount): while it is the same, a claimGetter returns
// the same allocations on the pool. ok is false if it is not known.
// cell is the caller's memory of where the pool's count is, which
// claimCount may set and read from instead of looking the pool up.
type claimCounter interface {
	claimCount(pool string, cell **claimCell) (count uint64, ok bool)
}

func newDRANodeMemo() *draNodeMemo {
	return &draNodeMemo{nodes: map[string]*draNodeSlot{}, byObj: map[*v1.Node]*draNodeSlot{}, held: map[types.UID]int32{},
		tables: map[uint64]*scoreTable{}}
}

// slotOf is node's slot, found by the object, or else by its name (and
// then keyed by the object), or else made. Past draNodeMemoMax names
// the memo starts afresh. O(1).
func (m *draNodeMemo) slotOf(node *v1.Node) *draNodeSlot {
	if s := m.byObj[node]; s != nil {
		return s
	}
	s := m.nodes[node.Name]
	switch {
	case s == nil:
		if len(m.nodes) >= draNodeMemoMax {
			clear(m.nodes)
			clear(m.byObj)
			clear(m.held)
			clear(m.tables)
			m.hasKey, m.table, m.nextOrd = false, nil, 0
		}
		s = &draNodeSlot{ord: m.nextOrd}
		m.nextOrd++
		m.nodes[node.Name] = s
	case s.node != node:
		delete(m.byObj, s.node)
	}
	s.node = node
	m.byObj[node] = s
	return s
}

// node returns ni's GPUs as draNode rebuilds them from get's claims,
// leaving out the pods whose UID is skip: the kept ones if nothing they
// were rebuilt from changed, else rebuilt (and kept). The node returned
// is the memo's: a caller may change it only if it restores it before
// the next call (the policies place the pod on it and take it off
// again). A nil memo rebuilds every time. count, if not nil, tells when
// the claims on the node's pool (named as the node) are the same
// without looking them up. byGen tells that ni's generation names its
// content (not in a PodGroup's cycle, whose members are assumed into the
// snapshot without a new generation): a node of the generation the
// entry was checked at, with the same claims' count, leaving out the
// same of its pods, is the entry's without a look at them. O(1) then; else O(pods on the
// node) for the check, and O(their claims) more if count does not tell.
func (m *draNodeMemo) node(ni fwk.NodeInfo, skip types.UID, get claimGetter, count claimCounter, byGen bool) *gpu.Node {
	if m == nil {
		return draNodeFrom(nodeInOf(ni), ni, skip, get)
	}
	_, e := m.entry(ni, skip, get, count, byGen)
	return e.n
}

// entry is node's entry for ni, checked or rebuilt as node says, with
// its slot.
func (m *draNodeMemo) entry(ni fwk.NodeInfo, skip types.UID, get claimGetter, count claimCounter, byGen bool) (*draNodeSlot, *draNodeEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.entryLocked(ni, skip, get, count, byGen)
}

// entryLocked is entry, under m.mu.
func (m *draNodeMemo) entryLocked(ni fwk.NodeInfo, skip types.UID, get claimGetter, count claimCounter, byGen bool) (*draNodeSlot, *draNodeEntry) {
	node := ni.Node()
	slot := m.slotOf(node)
	name := node.Name
	var events uint64
	counted := false
	if count != nil {
		events, counted = count.claimCount(name, &slot.cell)
	}
	e := slot.e
	if e != nil && byGen && slot.byGen && slot.gen == ni.GetGeneration() && counted && slot.counted && events == slot.events && m.leavesOutAlike(slot, skip) {
		m.byGen++
		if draNodeClaimsCheck != nil {
			draNodeClaimsCheck(name, e.claimsHold(get))
		}
		return slot, e
	}
	head := headOfNI(ni)
	if e != nil && e.holds(slot, head, ni, skip, get, events, counted) {
		if byGen {
			// The entry is ni's content now, which its generation names.
			slot.gen, slot.byGen, slot.skip, slot.events, slot.counted = ni.GetGeneration(), true, skip, events, counted
			slot.skipOn = e.uids[skip]
		}
		return slot, e
	}
	m.builds++
	m.nextID++
	e = &draNodeEntry{id: m.nextID, head: head}
	e.uids = make(map[types.UID]bool, len(ni.GetPods()))
	for _, pi := range ni.GetPods() {
		e.pods = append(e.pods, pi.GetPod())
		e.uids[pi.GetPod().UID] = true
	}
	e.n = draNodeFrom(nodeInOf(ni), ni, skip, func(namespace, name string) (*resourceapi.ResourceClaim, error) {
		c, err := get(namespace, name)
		e.claims = append(e.claims, claimRead{namespace: namespace, name: name, claim: c, failed: err != nil})
		return c, err
	})
	m.keep(slot, e)
	slot.gen, slot.byGen, slot.skip, slot.events, slot.counted = ni.GetGeneration(), byGen, skip, events, counted
	slot.skipOn = e.uids[skip]
	return slot, e
}

// lend calls use with ni's GPUs as node returns them (the memo's own
// node, which use may change if it restores it before it returns) and
// returns what use returns. If use panics (a policy's, midway through
// placing a pod on the node and taking it off), the node is forgotten
// before the panic goes on: the scheduler recovers a plugin's panic and
// goes on, and a later call would otherwise get the node as use left
// it. O(node's).
func (m *draNodeMemo) lend(ni fwk.NodeInfo, skip types.UID, get claimGetter, count claimCounter, byGen bool, use func(*gpu.Node) int64) int64 {
	if m == nil {
		return use(m.node(ni, skip, get, count, byGen))
	}
	slot, e := m.entry(ni, skip, get, count, byGen)
	done := false
	defer func() {
		if !done && draNodeLendForgets {
			m.forget(slot, e)
		}
	}()
	s := use(e.n)
	done = true
	return s
}

// scoreKey names a score kept in a node's entry (lendScore): the
// policy, whether the share goes to FGD's GPU, and the request by the
// scorer's number of it (with the numbering's epoch).
type scoreKey struct {
	policy gpu.Policy
	fgd    bool
	epoch  uint32
	num    int32
}

// packed is k as one number, the key of the memo's tables of scores: a
// map of uint64 keys hashes a word where one of scoreKey hashed the
// struct through its type's functions (a third of lendScore's cost,
// when each entry kept its scores in such a map). The epoch
// takes the high 32 bits, the policy the next 8, FGD's flag one, the
// request's number the low 23: one to one while the policy is below 256
// and the number below 1<<23 (the numbering restarts at maxFGDRequests),
// which it checks, so a key out of range panics instead of sharing a
// score. O(1).
func (k scoreKey) packed() uint64 {
	if k.policy < 0 || k.policy > 0xff || k.num < 0 || k.num >= 1<<23 {
		panic(fmt.Sprintf("scoreKey %+v out of range", k))
	}
	p := uint64(k.epoch)<<32 | uint64(k.policy)<<24 | uint64(k.num)
	if k.fgd {
		p |= 1 << 23
	}
	return p
}

// draScoreKeptOn turns on lendScore's keep of scores; tests turn it off
// to compare.
var draScoreKeptOn = true

// lendScore is lend(ni, ..., use), kept for ni's entry by key (in the
// key's table, the row of ni's slot, with the entry's id): use's answer
// is a function of the node's GPUs and figures, which the entry holds as
// long as it is the node's (a node whose content changed gets a new
// entry, of another id), and of what key names. Use must not draw
// random numbers. O(1) when kept, else lend's.
func (m *draNodeMemo) lendScore(ni fwk.NodeInfo, skip types.UID, get claimGetter, count claimCounter, byGen bool, key scoreKey, use func(*gpu.Node) int64) int64 {
	if m == nil || !draScoreKeptOn {
		return m.lend(ni, skip, get, count, byGen, use)
	}
	pk := key.packed()
	m.mu.Lock()
	slot, e := m.entryLocked(ni, skip, get, count, byGen)
	t := m.tableOf(pk)
	var s int64
	ok := false
	if t != nil && slot.ord < len(t.rows) && t.rows[slot.ord].id == slot.id {
		s, ok = t.rows[slot.ord].score, true
	}
	m.mu.Unlock()
	if ok {
		return s
	}
	done := false
	defer func() {
		if !done && draNodeLendForgets {
			m.forget(slot, e)
		}
	}()
	s = use(e.n)
	done = true
	m.mu.Lock()
	m.keepScore(pk, slot, e, s)
	m.mu.Unlock()
	return s
}

// draScoreTablesMax bounds the keys whose scores the memo keeps.
const draScoreTablesMax = 1024

// tableOf is the table of scores kept by pk, or nil. Under m.mu. O(1).
func (m *draNodeMemo) tableOf(pk uint64) *scoreTable {
	if !m.hasKey || pk != m.key {
		m.tick++
		m.key, m.table, m.hasKey = pk, m.tables[pk], true
		if m.table != nil {
			m.table.used = m.tick
		}
	}
	return m.table
}

// keepScore keeps s, slot's score by pk for entry e, in pk's table,
// made if pk has none (dropping the least recently used one past
// draScoreTablesMax). Under m.mu. O(1), O(slots) for a table made and
// O(draScoreTablesMax) for one dropped.
func (m *draNodeMemo) keepScore(pk uint64, slot *draNodeSlot, e *draNodeEntry, s int64) {
	t := m.tableOf(pk)
	if t == nil {
		if len(m.tables) >= draScoreTablesMax {
			m.dropTable()
		}
		t = &scoreTable{used: m.tick, rows: make([]scoreRow, m.nextOrd)}
		m.tables[pk], m.table = t, t
	}
	for slot.ord >= len(t.rows) {
		t.rows = append(t.rows, scoreRow{})
	}
	t.rows[slot.ord] = scoreRow{id: e.id, score: s}
}

// dropTable drops the least recently used table of scores. Under m.mu.
// O(tables).
func (m *draNodeMemo) dropTable() {
	var oldest uint64
	var used uint64
	first := true
	for pk, t := range m.tables {
		if first || t.used < used {
			oldest, used, first = pk, t.used, false
		}
	}
	delete(m.tables, oldest)
	if m.hasKey && m.key == oldest {
		m.hasKey, m.table = false, nil
	}
}

// draNodeLendForgets turns on lend's forgetting of a node whose user
// panicked; tests turn it off to show what it guards against.
var draNodeLendForgets = true

// forget drops slot's entry if it is e. O(1).
func (m *draNodeMemo) forget(slot *draNodeSlot, e *draNodeEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case slot.e != e:
	case m.nodes[slot.node.Name] == slot:
		m.keep(slot, nil)
	default:
		// A slot the memo dropped since (draNodeMemoMax): its pods are
		// no longer counted.
		slot.e = nil
	}
}

// holds reports whether e, slot's entry, was rebuilt from what ni, skip
// and get give now: the same node figures, the same pod objects in the
// same order, the same of them left out, and every claim e looked up
// the same object (or failing again). The lookups are made again in e's
// order, which is the order a rebuild would make them in; they are
// skipped if the count of the claims' events on the node's pool is the
// one slot last checked e at (counted): a rebuild reads only the
// claims' allocations on that pool.
func (e *draNodeEntry) holds(slot *draNodeSlot, head nodeHead, ni fwk.NodeInfo, skip types.UID, get claimGetter, events uint64, counted bool) bool {
	pods := ni.GetPods()
	if head != e.head || len(pods) != len(e.pods) {
		return false
	}
	for i, pi := range pods {
		p := pi.GetPod()
		if p != e.pods[i] || (p.UID == skip) != (p.UID == slot.skip) {
			return false
		}
	}
	if counted && slot.counted && events == slot.events {
		if draNodeClaimsCheck != nil {
			draNodeClaimsCheck(head.name, e.claimsHold(get))
		}
		return true
	}
	return e.claimsHold(get)
}

// draNodeClaimsCheck, if set (by tests), is told, for each node whose
// claims' count let the memo skip its lookups (in holds, or by the
// node's generation), whether the lookups give what the entry was
// rebuilt from.
var draNodeClaimsCheck func(node string, same bool)

// claimsHold reports whether every claim e looked up is the same object
// (or failing again) now.
func (e *draNodeEntry) claimsHold(get claimGetter) bool {
	for _, r := range e.claims {
		c, err := get(r.namespace, r.name)
		if (err != nil) != r.failed || (err == nil && c != r.claim) {
			return false
		}
	}
	return true
}
