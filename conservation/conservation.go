// Package conservation is the system's central rule written once: every
// sample the simulated hardware generates is stored exactly once or counted
// under a named drop counter. It owns the arithmetic of that check (what a
// run added to a database, against what its hosts generated) and the
// conservation lines every run prints; it reads nothing and starts
// nothing, so the demo, a local profile run, loadgen and the tests all
// judge a run the same way.
package conservation

import (
	"fmt"
	"slices"
	"strings"
)

// Totals is what a profile database holds of each view: samples stored
// (attributed or unknown), each named drop counter, and the samples
// expired (stored or dropped in epochs the retention policy deleted), for
// the flat profile, the call-stack view and the ProfileMe view.
type Totals struct {
	Stored       uint64
	Drops        map[string]uint64
	Expired      uint64
	StackStored  uint64
	StackDrops   map[string]uint64
	StackExpired uint64
	MeStored     uint64
	MeDrops      map[string]uint64
	MeExpired    uint64
}

// Since is what t holds beyond before, view by view and counter by
// counter; a counter below its baseline (a replica still applying the
// log) counts as zero, never as a wrapped-around figure. Samples expired
// since the baseline that the baseline held as stored or dropped (an old
// epoch deleted during the run) are netted out: they fell from stored and
// dropped as much as they rose in expired, and are none of the run's
// doing, so what remains is the run's own samples, expired or not.
func (t Totals) Since(before Totals) Totals {
	stored, drops, exp := sinceView(t.Stored, before.Stored, t.Drops, before.Drops, t.Expired, before.Expired)
	sStored, sDrops, sExp := sinceView(t.StackStored, before.StackStored, t.StackDrops, before.StackDrops, t.StackExpired, before.StackExpired)
	mStored, mDrops, mExp := sinceView(t.MeStored, before.MeStored, t.MeDrops, before.MeDrops, t.MeExpired, before.MeExpired)
	return Totals{Stored: stored, Drops: drops, Expired: exp, StackStored: sStored, StackDrops: sDrops, StackExpired: sExp,
		MeStored: mStored, MeDrops: mDrops, MeExpired: mExp}
}

// sinceView is Since for one view: the shortfall of stored and of each
// drop counter below its baseline comes off the expired count's growth.
func sinceView(stored, bStored uint64, drops, bDrops map[string]uint64, exp, bExp uint64) (uint64, map[string]uint64, uint64) {
	grown := exp - min(bExp, exp)
	short := bStored - min(bStored, stored)
	for name, b := range bDrops {
		short += b - min(b, drops[name])
	}
	return stored - min(bStored, stored), Since(drops, bDrops), grown - min(short, grown)
}

// Dropped is the sum of the flat view's drop counters.
func (t Totals) Dropped() uint64 {
	var d uint64
	for _, n := range t.Drops {
		d += n
	}
	return d
}

// Since is now's drop counters less before's, each at least zero.
func Since(now, before map[string]uint64) map[string]uint64 {
	out := map[string]uint64{}
	for name, n := range now {
		out[name] = n - min(before[name], n)
	}
	return out
}

// Check is one view's verdict: whether stored and the drop counters make
// up what was generated exactly.
type Check struct {
	Generated, Stored, Dropped uint64
	// Names lists the nonzero drop counters, "name count", sorted, or
	// says that none is nonzero.
	Names    string
	Balanced bool
}

// Balance sums the nonzero drop counters, lists them by name, and says
// whether stored and dropped make up generated exactly.
func Balance(generated, stored uint64, drops map[string]uint64) Check {
	c := Check{Generated: generated, Stored: stored}
	var list []string
	for name, n := range drops {
		if n > 0 {
			c.Dropped += n
			list = append(list, fmt.Sprintf("%s %d", name, n))
		}
	}
	slices.Sort(list)
	c.Names = DropList(list)
	c.Balanced = stored+c.Dropped == generated
	return c
}

// Verdict is the word a conservation line ends with.
func (c Check) Verdict() string {
	if c.Balanced {
		return "balanced"
	}
	return "NOT BALANCED"
}

// DropList joins drop counters' "name count" entries for a line, or says
// that none is nonzero.
func DropList(names []string) string {
	if len(names) == 0 {
		return "no drop counter is nonzero"
	}
	return strings.Join(names, ", ")
}

// SamplesLine is the conservation line every run prints: what the
// simulated hardware generated against what was stored, what each named
// drop counter holds and, once retention has deleted epochs, what they
// held (expired), and whether they balance exactly.
func SamplesLine(generated, stored, expired uint64, drops map[string]uint64) (line string, balanced bool) {
	return samplesLine("", generated, stored, expired, drops)
}

// samplesLine is SamplesLine with what generated the samples named
// (empty: the simulated hardware).
func samplesLine(source string, generated, stored, expired uint64, drops map[string]uint64) (line string, balanced bool) {
	if source == "" {
		source = SimulatedHardware
	}
	c := Balance(generated, stored+expired, drops)
	c.Stored = stored
	return fmt.Sprintf("conservation: %d samples generated by %s = %d stored + %d dropped (%s)%s: %s",
		generated, source, stored, c.Dropped, c.Names, expiredPart(expired), c.Verdict()), c.Balanced
}

// What generates samples, as the conservation line names it.
const (
	SimulatedHardware = "the simulated hardware"
	LinuxKernel       = "the kernel" // a real Linux host's perf_event_open sampling
)

// expiredPart is a line's term for the samples retention deleted, shown
// only when there are some.
func expiredPart(expired uint64) string {
	if expired == 0 {
		return ""
	}
	return fmt.Sprintf(" + %d expired (in epochs retention deleted)", expired)
}

// StacksLine is the stack view's conservation line, printed when the hosts
// recorded call stacks: every sample the hardware generated has its stack
// stored or counted under a stack drop counter (wire.StackEntry).
func StacksLine(generated, stored, expired uint64, drops map[string]uint64) (line string, balanced bool) {
	c := Balance(generated, stored+expired, drops)
	return fmt.Sprintf("call stacks: %d samples generated = %d with their stack stored + %d whose stack was dropped (%s)%s: %s",
		generated, stored, c.Dropped, c.Names, expiredPart(expired), c.Verdict()), c.Balanced
}

// ProfileMeLine is the ProfileMe view's conservation line, printed when the
// hosts ran ProfileMe: every instruction the hardware tagged is stored
// (attributed or unknown) or counted under a ProfileMe drop counter
// (wire.DropMeOverflowFull, wire.DropMeHardwareFull).
func ProfileMeLine(tagged, stored, expired uint64, drops map[string]uint64) (line string, balanced bool) {
	c := Balance(tagged, stored+expired, drops)
	return fmt.Sprintf("profileme: %d instructions tagged = %d stored + %d dropped (%s)%s: %s",
		tagged, stored, c.Dropped, c.Names, expiredPart(expired), c.Verdict()), c.Balanced
}

// Views says which conservation lines a run prints beside the flat
// profile's.
type Views struct {
	// Source names what generated the samples (SimulatedHardware when
	// empty, LinuxKernel for a real host).
	Source string
	Stacks bool
	// ProfileMe was on, and the hardware tagged MeTagged instructions.
	ProfileMe bool
	MeTagged  uint64
}

// Lines are a run's conservation lines from what it added to a database
// (added: the totals now, Since the run's baseline): the flat profile's,
// then the stack view's and the ProfileMe view's where v turns them on.
// stackGenerated is what the stack view must account for (the samples the
// run's drivers delivered: a resumed host's predecessor's crash-lost
// samples are drops of the flat view only). balanced is whether every
// line balances.
func Lines(generated, stackGenerated uint64, added Totals, v Views) (lines []string, balanced bool) {
	line, balanced := samplesLine(v.Source, generated, added.Stored, added.Expired, added.Drops)
	lines = append(lines, line)
	if v.Stacks {
		l, ok := StacksLine(stackGenerated, added.StackStored, added.StackExpired, added.StackDrops)
		lines, balanced = append(lines, l), balanced && ok
	}
	if v.ProfileMe {
		l, ok := ProfileMeLine(v.MeTagged, added.MeStored, added.MeExpired, added.MeDrops)
		lines, balanced = append(lines, l), balanced && ok
	}
	return lines, balanced
}
