package profiledb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"dcpi/analysis"
	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/storage"
)

// DefaultPeriods is every event's events per sample under the default
// counter configuration (hwsim.DefaultProfile, whose second counter's
// period dcpi node gives every event but cycles): what a host registered
// before node records carried periods is taken to have used.
func DefaultPeriods() map[uint8]uint64 {
	def := hwsim.DefaultProfile()
	periods := map[uint8]uint64{}
	for e := range alpha.NumEvents {
		spec := def.Counters[1]
		if e == alpha.EvCycles {
			spec = def.Counters[0]
		}
		periods[uint8(e)] = (spec.PeriodMin + spec.PeriodMax) / 2
	}
	return periods
}

// Periods is a choice of each event's period (events per
// sample) for the selected hosts.
type Periods struct {
	// Periods are those all the selected hosts agree on, or --period's.
	Periods map[uint8]int64
	// Conflicts are the events the selected hosts disagree on (with no
	// --period), each with who says what: exported as samples only, and
	// refused by check if the profile holds any of them.
	Conflicts map[uint8]string
	// Legacy are the selected hosts whose node records carry no periods
	// (registered by an earlier build, or not at all), given the default
	// configuration's.
	Legacy []string
}

// ChoosePeriods takes each event's period from the node records of hosts:
// one every host that records a period for the event agrees on, else a
// conflict; a host without periods counts as the default configuration
// (DefaultPeriods). --period E=N overrides (E=0: samples only).
func ChoosePeriods(nodes []storage.Node, hosts []string, flags []string) (Periods, error) {
	byHost := map[string]storage.Node{}
	for _, n := range nodes {
		byHost[n.Host] = n
	}
	type vote struct {
		period uint64
		hosts  []string
	}
	votes := map[uint8][]vote{}
	pc := Periods{Periods: map[uint8]int64{}, Conflicts: map[uint8]string{}}
	for _, h := range hosts {
		periods := byHost[h].Periods
		if len(periods) == 0 {
			pc.Legacy = append(pc.Legacy, h)
			periods = DefaultPeriods()
		}
		for e, n := range periods {
			i := slices.IndexFunc(votes[e], func(v vote) bool { return v.period == n })
			if i < 0 {
				votes[e] = append(votes[e], vote{period: n})
				i = len(votes[e]) - 1
			}
			votes[e][i].hosts = append(votes[e][i].hosts, h)
		}
	}
	if len(hosts) == 0 {
		// Nothing selected, or no host known: the default, as for a
		// host without periods (and no samples to weigh anyway).
		for e, n := range DefaultPeriods() {
			votes[e] = []vote{{period: n}}
		}
	}
	for e, vs := range votes {
		if len(vs) == 1 {
			pc.Periods[e] = int64(min(vs[0].period, math.MaxInt64))
			continue
		}
		var says []string
		for _, v := range vs {
			says = append(says, fmt.Sprintf("%d on %s", v.period, strings.Join(v.hosts, ", ")))
		}
		slices.Sort(says)
		pc.Conflicts[e] = strings.Join(says, "; ")
	}
	for _, f := range flags {
		name, v, ok := strings.Cut(f, "=")
		if !ok {
			return pc, fmt.Errorf("--period %q: want EVENT=N", f)
		}
		e, err := analysis.ParseEvent(strings.TrimSpace(name))
		if err != nil {
			return pc, fmt.Errorf("--period %q: %w", f, errors.Unwrap(err))
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			return pc, fmt.Errorf("--period %q: want a number of events >= 0", f)
		}
		delete(pc.Conflicts, e)
		if n == 0 {
			delete(pc.Periods, e)
		} else {
			pc.Periods[e] = n
		}
	}
	return pc, nil
}

// SelectedPeriods chooses the periods for the hosts the filter
// selects (all the source's when it names none) from the source's node
// registry.
func SelectedPeriods(ctx context.Context, db DB, hosts []string, flags []string) (Periods, error) {
	nodes, err := registry(ctx, db)
	if err != nil {
		return Periods{}, fmt.Errorf("sampling periods: %w", err)
	}
	if hosts == nil {
		if hosts, err = db.Hosts(ctx); err != nil {
			return Periods{}, fmt.Errorf("sampling periods: %w", err)
		}
	}
	return ChoosePeriods(nodes, hosts, flags)
}

// Check refuses an export whose sample types (names of the events as
// analysis.EventName gives them, or NAME_samples) include an event the
// hosts disagree on, and notes on w the hosts given the default
// configuration's periods when the export holds samples.
func (pc Periods) Check(sampleTypes []string, samples int, w io.Writer) error {
	for e, says := range pc.Conflicts {
		name := analysis.EventName(e)
		for _, st := range sampleTypes {
			if st == name || st == name+"_samples" {
				return fmt.Errorf("the selected hosts sample %s with different periods (events per sample: %s): select hosts that agree with --host, or give --period %s=N (0: samples only)", name, says, name)
			}
		}
	}
	if len(pc.Legacy) > 0 && samples > 0 {
		def := DefaultPeriods()
		fmt.Fprintf(w, "note: no recorded sampling periods for %s (registered by an earlier dcpi): using the default configuration's (cycles %d, other events %d; --period sets them)\n",
			strings.Join(pc.Legacy, ", "), def[uint8(alpha.EvCycles)], def[uint8(alpha.EvIMiss)])
	}
	return nil
}

// CalcPeriods gives each selected host (every host of the source when the
// filter names none) its periods per event from the node registry, with
// --period's overrides, as dcpi pprof chooses them for one host.
func CalcPeriods(ctx context.Context, db DB, hosts []string, flags []string, note io.Writer) (map[string]map[uint8]float64, error) {
	nodes, err := registry(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("sampling periods: %w", err)
	}
	known, err := db.Hosts(ctx)
	if err != nil {
		return nil, fmt.Errorf("sampling periods: %w", err)
	}
	if hosts == nil {
		hosts = known
	} else {
		// A host named but unknown has no samples to weigh: leave it to
		// the query's own "no samples for host" error.
		hosts = slices.DeleteFunc(slices.Clone(hosts), func(h string) bool { return !slices.Contains(known, h) })
	}
	out := map[string]map[uint8]float64{}
	var legacy []string
	for _, h := range hosts {
		pc, err := ChoosePeriods(nodes, []string{h}, flags)
		if err != nil {
			return nil, err
		}
		legacy = append(legacy, pc.Legacy...)
		m := map[uint8]float64{}
		for e, n := range pc.Periods {
			m[e] = float64(n)
		}
		out[h] = m
	}
	if len(out) == 0 {
		return nil, errors.New("the selection holds no samples from any host: nothing to analyze")
	}
	if len(legacy) > 0 && len(flags) == 0 {
		def := DefaultPeriods()
		fmt.Fprintf(note, "note: no recorded sampling periods for %s (registered by an earlier dcpi): using the default configuration's (cycles %d, other events %d; --period sets them)\n",
			strings.Join(legacy, ", "), def[uint8(alpha.EvCycles)], def[uint8(alpha.EvIMiss)])
	}
	return out, nil
}

// registry is db's node registry.
func registry(ctx context.Context, db DB) ([]storage.Node, error) {
	infos, err := db.Nodes(ctx)
	nodes := make([]storage.Node, len(infos))
	for i, n := range infos {
		nodes[i] = n.Node
	}
	return nodes, err
}

// ErrOutOfOrderCore is wrapped when dcpi calc is asked to analyze a host
// that ran an out-of-order core: its static schedules are the 21164's
// in-order pipeline (DCPI sec. 6: "designed for processors that execute
// instructions in order").
var ErrOutOfOrderCore = errors.New("the profile is of an out-of-order core")

// RefuseOutOfOrder returns an error wrapping ErrOutOfOrderCore, in one
// line pointing at dcpi me, when a selected host (hosts, or every
// registered one when nil) is labelled with an out-of-order model
// (alpha.ModelLabel, recorded by dcpi profile --model ev6).
func RefuseOutOfOrder(ctx context.Context, db DB, hosts []string) error {
	nodes, err := db.Nodes(ctx)
	if err != nil {
		return fmt.Errorf("node registry: %w", err)
	}
	for _, n := range nodes {
		m, ok := n.Labels[alpha.ModelLabel]
		if !ok || hosts != nil && !slices.Contains(hosts, n.Host) {
			continue
		}
		if model, err := alpha.ModelByName(m); err == nil && model.OutOfOrder() {
			return fmt.Errorf("host %s ran the 21264's out-of-order core (%s=%s), which dcpi calc's in-order 21164 schedules do not describe: %w; use dcpi me (ProfileMe) for it",
				n.Host, alpha.ModelLabel, m, ErrOutOfOrderCore)
		}
	}
	return nil
}
