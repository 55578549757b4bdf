package schedq

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Explanation answers "why is this item still pending?" for one key.
type Explanation[K comparable] struct {
	// Key is the item's key; JSON writes it as text (fmt.Sprint).
	Key K `json:"key"`
	// Group names the item's group, if it is a group member; Status then
	// describes the group's entity, except Attempts and Since.
	Group    string   `json:"group,omitempty"`
	Location Location `json:"location"`
	// Since is when the item entered its current place.
	Since time.Time `json:"since"`
	Status
	// WakingEvents are the events, registered by the plugins holding the
	// item back, that can move it (parked and gated items only).
	WakingEvents []string `json:"wakingEvents,omitempty"`
	// DeferredBy is the event (its label) that would have woken a parked
	// item but whose room was not enough for it beside what the items
	// woken before it hold (Config.Budget): items ahead of it in the same
	// offer, or items that this or another event of the same room woke
	// earlier, whatever their order. The item wakes if room comes back.
	DeferredBy string `json:"deferredBy,omitempty"`
	// LeftoverFlushAt is the earliest time the leftover flush retries a
	// parked item even if no event comes.
	LeftoverFlushAt time.Time `json:"leftoverFlushAt,omitzero"`
	// NominatedTarget is the target the item is nominated to (Nominate),
	// if any.
	NominatedTarget string `json:"nominatedTarget,omitempty"`
	// Reason says the above in one sentence.
	Reason string `json:"reason"`
	// Tenant is the item's tenant, under Config.Fairness.
	Tenant string `json:"tenant,omitempty"`
	// Position is where the item stands in line, with an estimate of its
	// next attempt (Explain only; nil in flight and in Dump).
	Position *Position `json:"position,omitempty"`
}

// explanationJSON is Explanation without its methods.
type explanationJSON[K comparable] Explanation[K]

// MarshalJSON implements json.Marshaler: the fields as tagged, with the
// key as text, whatever its type.
func (x Explanation[K]) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Key string `json:"key"` // hides the embedded Key
		*explanationJSON[K]
	}{fmt.Sprint(x.Key), (*explanationJSON[K])(&x)})
}

// Explain says where the item with key is and why, and where it stands
// in line (Explanation.Position). It returns an error wrapping
// ErrNotFound if the key is neither queued nor in flight. O(r + n) for r
// hint registrations and n queued items (the position). The lists of its
// Status are the queue's, as Info's are: read them, never write to them.
func (c *Core[K, T]) Explain(key K, now time.Time) (Explanation[K], error) {
	e := c.keys[key]
	if e == nil {
		return Explanation[K]{}, fmt.Errorf("%w: %v is neither queued nor in flight", ErrNotFound, key)
	}
	x := c.explain(e, now)
	x.Position = c.locate(e, now)
	return x, nil
}

func (c *Core[K, T]) explain(e *entry[K, T], now time.Time) Explanation[K] {
	if e.kind == kindMember {
		return c.explainMember(e, now)
	}
	x := Explanation[K]{Key: e.key, Location: e.loc.location(), Status: e.Status}
	x.Since = time.Unix(0, e.entered).UTC()
	if c.fair != nil {
		x.Tenant = c.fair.cfg.Tenant(e.Item)
	}
	if e.loc == locParked || e.loc == locGated {
		x.WakingEvents = c.wakingEvents(e)
		if g := c.deferredBy(e); g != nil {
			x.DeferredBy = g.label
		}
		from := max(e.Timestamp.UnixNano(), c.lastFlushed(e))
		// The flush takes items older than the maximum, at its next tick.
		x.LeftoverFlushAt = time.Unix(0, from).Add(c.cfg.MaxInUnschedulable).UTC()
	}
	x.Reason = x.reason(now)
	if e.kind != kindGroup { // an entity's key is no item's: its members are nominated
		c.noteNomination(&x, e.key)
	}
	return x
}

// wakingEvents names the registered events that can move parked or
// gated entry e: those of the checks holding it back (its gate alone, if
// gated), once each, in the registrations' order. One allocation, none
// if there are none: Dump calls it for every parked item.
func (c *Core[K, T]) wakingEvents(e *entry[K, T]) []string {
	holds := func(p string) bool {
		if e.loc == locGated {
			return p == e.GatedBy
		}
		return slices.Contains(e.RejectedBy, p) || slices.Contains(e.WaitingOn, p) || p == e.GatedBy
	}
	n := 0
	for i := range c.regs {
		if holds(c.regs[i].plugin) {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	events := make([]string, 0, n)
	for i := range c.regs {
		if r := &c.regs[i]; holds(r.plugin) && !slices.Contains(events, r.waking) {
			events = append(events, r.waking)
		}
	}
	return events
}

// noteNomination adds the nomination of the item with key, if any, to x.
func (c *Core[K, T]) noteNomination(x *Explanation[K], key K) {
	x.NominatedTarget = c.nom.of[key]
	if x.NominatedTarget != "" {
		x.Reason += "; nominated to " + x.NominatedTarget
	}
}

func (x Explanation[K]) reason(now time.Time) string {
	switch x.Location {
	case InActive:
		return "ready: waiting in activeQ for its turn"
	case InFlight:
		return "being tried now (in flight)"
	case InBackoff:
		why := "failed with an error"
		if plugins := x.plugins(); plugins != "" {
			why = "rejected by " + plugins
		}
		return fmt.Sprintf("backing off after %d failed attempt(s) (%s) until %s (in %v)",
			x.Attempts, why, x.BackoffExpiry.Format(time.RFC3339Nano), x.BackoffExpiry.Sub(now).Round(time.Millisecond))
	case InGated:
		return fmt.Sprintf("gated by %s; waiting for %s", x.GatedBy, waitingFor(x.WakingEvents))
	case InUnschedulable:
		plugins := x.plugins()
		if x.DeferredBy != "" {
			return fmt.Sprintf("unschedulable: rejected by %s; %s made room, not enough for it beside what items woken before it hold: "+
				"waiting for that room to come back, for %s, or the leftover flush after %s",
				plugins, x.DeferredBy, waitingFor(x.WakingEvents), x.LeftoverFlushAt.Format(time.RFC3339))
		}
		return fmt.Sprintf("unschedulable: rejected by %s; waiting for %s, or the leftover flush after %s",
			plugins, waitingFor(x.WakingEvents), x.LeftoverFlushAt.Format(time.RFC3339))
	}
	return ""
}

// plugins names the checks that rejected the item or left it waiting,
// for the reasons that name them (only backoff's and the parking area's:
// items elsewhere need not pay for the string).
func (x Explanation[K]) plugins() string {
	switch {
	case len(x.WaitingOn) == 0:
		return strings.Join(x.RejectedBy, ", ")
	case len(x.RejectedBy) == 0:
		return strings.Join(x.WaitingOn, ", ")
	}
	return strings.Join(append(slices.Clone(x.RejectedBy), x.WaitingOn...), ", ")
}

func waitingFor(events []string) string {
	if len(events) == 0 {
		return "no registered event"
	}
	return strings.Join(events, " or ")
}

// String renders the explanation for people, one fact a line.
func (x Explanation[K]) String() string {
	var b strings.Builder
	line := func(k, format string, args ...any) {
		fmt.Fprintf(&b, "%-22s %s\n", k+":", fmt.Sprintf(format, args...))
	}
	line("item", "%v", x.Key)
	line("where", "%s since %s", x.Location, x.Since.Format(time.RFC3339Nano))
	line("why", "%s", x.Reason)
	if x.Tenant != "" {
		line("tenant", "%s", x.Tenant)
	}
	if x.Position != nil {
		line("position", "%s", x.Position)
	}
	line("attempts", "%d (%d unschedulable, %d errors in a row)", x.Attempts, x.UnschedulableCount, x.ConsecutiveErrors)
	if len(x.RejectedBy) > 0 {
		line("rejected by", "%s", strings.Join(x.RejectedBy, ", "))
	}
	if len(x.WaitingOn) > 0 {
		line("pending on", "%s", strings.Join(x.WaitingOn, ", "))
	}
	if x.Message != "" {
		line("last failure", "%s", x.Message)
	}
	if x.NominatedTarget != "" {
		line("nominated to", "%s", x.NominatedTarget)
	}
	if x.GatedBy != "" {
		line("gated by", "%s", x.GatedBy)
	}
	if !x.BackoffExpiry.IsZero() {
		line("backoff ends", "%s", x.BackoffExpiry.Format(time.RFC3339Nano))
	}
	if len(x.WakingEvents) > 0 {
		line("woken by", "%s", strings.Join(x.WakingEvents, ", "))
	}
	if x.DeferredBy != "" {
		line("deferred by", "%s (not enough room for it beside the items woken before it)", x.DeferredBy)
	}
	if !x.LeftoverFlushAt.IsZero() {
		line("leftover flush after", "%s", x.LeftoverFlushAt.Format(time.RFC3339))
	}
	line("enqueued", "%s", x.Timestamp.Format(time.RFC3339Nano))
	if !x.InitialAttemptTimestamp.IsZero() {
		line("first in activeQ", "%s", x.InitialAttemptTimestamp.Format(time.RFC3339Nano))
	}
	return b.String()
}

// Dump is every item with its explanation, and a summary per place.
type Dump[K comparable] struct {
	Time    time.Time        `json:"time"`
	Summary []Summary        `json:"summary"`
	Items   []Explanation[K] `json:"items"`
}

// Summary describes one place: its size, its oldest item, and (for the
// parking area) how many items each check holds back.
type Summary struct {
	Location Location       `json:"location"`
	Count    int            `json:"count"`
	Oldest   time.Time      `json:"oldest,omitzero"`
	ByCheck  map[string]int `json:"byCheck,omitempty"`
}

// Dump explains every queued and in-flight item, in a stable order (by
// place, then key). O(n log n). The lists of the explanations' Status
// are the queue's, as Info's are: read them, never write to them.
func (c *Core[K, T]) Dump(now time.Time) Dump[K] {
	d := c.collect(now)
	d.finish()
	return d
}

// collect explains every item, unsorted: the part of Dump that reads the
// core. O(n).
func (c *Core[K, T]) collect(now time.Time) Dump[K] {
	d := Dump[K]{Time: now, Items: make([]Explanation[K], 0, len(c.keys))}
	for _, e := range c.keys {
		d.Items = append(d.Items, c.explain(e, now))
		if f := e.shadowOf(); f != nil {
			d.Items = append(d.Items, c.explain(f, now))
		}
	}
	return d
}

// finish sorts the items and summarises each place; it reads only d, so
// the concurrent Queue runs it outside its lock. O(n log n).
//
// The order is by place, then by the key's text (fmt.Sprint). The sort
// runs on small records (place, text, index), not on the explanations,
// which are large to swap, and takes each key's text from one buffer
// written once, not from a map looked up at every comparison; then the
// explanations move once each, in place, to where the records say.
func (d *Dump[K]) finish() {
	n := len(d.Items)
	type rank struct {
		text string
		loc  Location
		at   int // the explanation's index in d.Items before the sort
	}
	ranks := make([]rank, n)
	buf := make([]byte, 0, 8*n) // room for most keys' text: grows if not
	for i := range d.Items {
		buf = appendKeyText(buf, d.Items[i].Key)
		ranks[i] = rank{loc: d.Items[i].Location, at: len(buf)} // at: where its text ends, for now
	}
	texts, start := string(buf), 0
	for i := range ranks {
		ranks[i].text, start = texts[start:ranks[i].at], ranks[i].at
		ranks[i].at = i
	}
	slices.SortFunc(ranks, func(a, b rank) int {
		return cmp.Or(cmp.Compare(a.loc, b.loc), strings.Compare(a.text, b.text))
	})
	// Place d.Items[ranks[k].at] at k, cycle by cycle: each explanation
	// is copied once, and ranks[k].at = -1 marks k as done.
	for s := range ranks {
		if ranks[s].at < 0 {
			continue
		}
		held := d.Items[s]
		k := s
		for {
			from := ranks[k].at
			ranks[k].at = -1
			if from == s {
				d.Items[k] = held
				break
			}
			d.Items[k] = d.Items[from]
			k = from
		}
	}
	d.summarise()
}

// summarise fills d.Summary, one entry a place in order, from the items
// sorted by place. O(n).
func (d *Dump[K]) summarise() {
	items := d.Items
	for loc := InActive; loc <= InPending; loc++ {
		s := Summary{Location: loc}
		for len(items) > 0 && items[0].Location < loc { // no place of its own (none today)
			items = items[1:]
		}
		for len(items) > 0 && items[0].Location == loc {
			x := &items[0]
			items = items[1:]
			s.Count++
			if s.Oldest.IsZero() || x.Since.Before(s.Oldest) {
				s.Oldest = x.Since
			}
			if loc == InUnschedulable || loc == InGated {
				if s.ByCheck == nil {
					s.ByCheck = map[string]int{}
				}
				for _, p := range x.RejectedBy {
					s.ByCheck[p]++
				}
				for _, p := range x.WaitingOn {
					s.ByCheck[p]++
				}
				if x.GatedBy != "" {
					s.ByCheck[x.GatedBy]++
				}
			}
		}
		d.Summary = append(d.Summary, s)
	}
}

// appendKeyText appends fmt.Sprint(key) to buf. Strings and the built-in
// integers, the usual keys, are written without fmt, which would box
// each key; any other type (named ones included, whose String method
// fmt calls) goes through fmt.
func appendKeyText[K comparable](buf []byte, key K) []byte {
	switch k := any(key).(type) {
	case string:
		return append(buf, k...)
	case int:
		return strconv.AppendInt(buf, int64(k), 10)
	case int64:
		return strconv.AppendInt(buf, k, 10)
	case int32:
		return strconv.AppendInt(buf, int64(k), 10)
	case uint:
		return strconv.AppendUint(buf, uint64(k), 10)
	case uint64:
		return strconv.AppendUint(buf, k, 10)
	case uint32:
		return strconv.AppendUint(buf, uint64(k), 10)
	}
	return fmt.Append(buf, key)
}

// String renders the dump for people: the summary, then one line an item.
func (d Dump[K]) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "queue at %s\n", d.Time.Format(time.RFC3339Nano))
	for _, s := range d.Summary {
		fmt.Fprintf(&b, "  %-14s %6d", s.Location, s.Count)
		if !s.Oldest.IsZero() {
			fmt.Fprintf(&b, "  oldest since %s", s.Oldest.Format(time.RFC3339))
		}
		if len(s.ByCheck) > 0 {
			names := make([]string, 0, len(s.ByCheck))
			for p := range s.ByCheck {
				names = append(names, p)
			}
			slices.Sort(names)
			parts := make([]string, len(names))
			for i, p := range names {
				parts[i] = fmt.Sprintf("%s=%d", p, s.ByCheck[p])
			}
			fmt.Fprintf(&b, "  by plugin: %s", strings.Join(parts, " "))
		}
		b.WriteByte('\n')
	}
	for _, x := range d.Items {
		fmt.Fprintf(&b, "%-14s %v: %s\n", x.Location, x.Key, x.Reason)
	}
	return b.String()
}
