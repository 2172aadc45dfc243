package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	"dcpi/conservation"
	"dcpi/storage"
	"dcpi/wire"
)

// Collect waits until every host has run its simulated seconds, cutting
// an epoch fleet-wide when the slowest host has run cutAt of them (0: no
// cut), and returns the epoch the cut opened (0: none). On a terminal it
// says how far the hosts are and what is stored.
func (cl *Cluster) Collect(ctx context.Context, seconds, cutAt float64) (cut uint64, err error) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	finished := make([]bool, len(cl.hosts))
	for done := 0; done < len(cl.hosts); {
		select {
		case <-ctx.Done():
			return cut, ctx.Err()
		case <-tick.C:
		}
		slowest := seconds
		for i, h := range cl.hosts {
			if finished[i] {
				continue
			}
			select {
			case err := <-h.ran:
				if err != nil {
					return cut, fmt.Errorf("host %s: %w", h.name, err)
				}
				finished[i] = true
				done++
			default:
				slowest = min(slowest, h.SimSeconds())
			}
		}
		if cut == 0 && cutAt > 0 && slowest >= cutAt*seconds {
			if cut, err = cl.coord.CutEpoch(ctx); err != nil {
				return 0, fmt.Errorf("epoch cut: %w", err)
			}
		}
		if cl.cfg.Progress.Due() {
			cl.printCollecting(ctx, slowest, seconds, cut)
		}
	}
	return cut, nil
}

func (cl *Cluster) printCollecting(ctx context.Context, slowest, seconds float64, cut uint64) {
	var published uint64
	for _, h := range cl.hosts {
		published += h.pub.Stats().SamplesPublished
	}
	tot, _ := cl.coord.Totals(ctx, storage.Query{}, false)
	var open uint64
	if eps, err := cl.coord.Epochs(ctx); err == nil && len(eps) > 0 {
		open = eps[len(eps)-1].Number
	}
	cl.cfg.Progress.Printf("hosts at %.3f/%.3f simulated s | %d samples published | %d stored | %s",
		slowest, seconds, published, tot.Samples+tot.Unknown+tot.Expired.Samples-cl.base.Totals.Stored-cl.base.Totals.Expired, epochNote(open, cut))
}

// epochNote is the open epoch (the schedule may have cut before it) and
// the cut by hand, if made.
func epochNote(open, cut uint64) string {
	note := fmt.Sprintf("epoch %d open", open)
	if cut == 0 {
		return note + ", not cut by hand yet"
	}
	return note + fmt.Sprintf(", cut by hand from %d to %d", cut-1, cut)
}

// Run is what the hosts' hardware generated in a run, against what the
// database holds beyond the run's baseline.
type Run struct {
	// Generated counts the samples the hosts' predecessors lost too
	// (Baseline.Lost), which the database holds as drops now.
	Generated uint64
	// MeTagged is the instructions the hosts' ProfileMe hardware tagged.
	MeTagged uint64
	// Added is what the database holds beyond the baseline.
	Added conservation.Totals
}

// WaitStored flushes every host's publisher and waits until the database
// holds every sample the hosts generated beyond the baseline, in a
// profile or a drop counter, saying on a terminal what it waits for. It
// gives up only when storage makes no progress for stall; the
// conservation lines then say what is missing.
func (cl *Cluster) WaitStored(ctx context.Context, stall time.Duration) (Run, error) {
	r := Run{Generated: cl.base.Lost}
	for _, h := range cl.hosts {
		r.Generated += h.Generated()
		r.MeTagged += h.MeTagged()
		if err := h.pub.Flush(ctx); err != nil {
			return r, fmt.Errorf("host %s: flushing its publisher: %w", h.name, err)
		}
	}
	last, lastChange := uint64(0), time.Now()
	for {
		tot, err := cl.Totals(ctx)
		if err != nil {
			return r, err
		}
		r.Added = tot.Since(cl.base.Totals)
		got := r.Added.Stored + r.Added.Dropped()
		if got >= r.Generated {
			return r, nil
		}
		if got != last {
			last, lastChange = got, time.Now()
		} else if time.Since(lastChange) > stall {
			return r, nil
		}
		cl.cfg.Progress.Printf("waiting for storage: %d of the %d samples generated are stored or counted as dropped", got, r.Generated)
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return r, err
		}
	}
}

// WaitSealed waits for the coordinator to seal every epoch before epoch
// cut (those a cut by hand or the schedule closed), saying on a terminal
// which hosts' acknowledgements it still waits for.
func (cl *Cluster) WaitSealed(ctx context.Context, cut uint64, timeout time.Duration) error {
	if cut < 2 {
		return nil
	}
	deadline := time.Now().Add(timeout)
	unsealed := cut - 1
	for time.Now().Before(deadline) {
		eps, err := cl.coord.Epochs(ctx)
		if err != nil {
			return err
		}
		unsealed = 0
		waiting := "its stored batches"
		for _, e := range eps {
			if e.Number >= cut || e.State == storage.EpochSealed {
				continue
			}
			unsealed = e.Number
			if len(e.Waiting) > 0 {
				waiting = "acknowledgements from " + strings.Join(e.Waiting, ", ")
			}
			break
		}
		if unsealed == 0 {
			return nil
		}
		cl.cfg.Progress.Printf("waiting for epoch %d to be sealed: waiting for %s", unsealed, waiting)
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("epoch %d not sealed after %v", unsealed, timeout)
}

// Conservation is the run's conservation lines from what the database
// holds now: the flat profile's, and the stack and ProfileMe views' where
// v turns them on. A resumed host's predecessor's crash-lost samples are
// drops of the flat view only: the stack view counts what this run's
// drivers delivered.
func (cl *Cluster) Conservation(ctx context.Context, r Run, v conservation.Views) (lines []string, balanced bool, err error) {
	tot, err := cl.Totals(ctx)
	if err != nil {
		return nil, false, err
	}
	v.MeTagged = r.MeTagged
	lines, balanced = conservation.Lines(r.Generated, r.Generated-cl.base.Lost, tot.Since(cl.base.Totals), v)
	return lines, balanced, nil
}

// ValueBaselines is what the cluster holds of each host's value
// accounting (before a run on a continued fleet, so the run balances what
// it added).
func (cl *Cluster) ValueBaselines(ctx context.Context, hosts []string) (map[string]wire.ValueStats, error) {
	out := map[string]wire.ValueStats{}
	for _, h := range hosts {
		_, s, err := cl.coord.ValueTotals(ctx, storage.Query{Hosts: []string{h}}, true)
		if err != nil {
			return nil, err
		}
		out[h] = s
	}
	return out, nil
}

// WaitValuesStored waits until the cluster has stored the value
// accounting of every interrupt the hosts' hardware delivered (beyond
// base), or nothing new for stall, saying so on a terminal.
func (cl *Cluster) WaitValuesStored(ctx context.Context, base map[string]wire.ValueStats, stall time.Duration) error {
	var want, before uint64
	for _, h := range cl.hosts {
		want += h.Interrupts()
		before += base[h.name].Interrupts
	}
	last, lastChange := uint64(0), time.Now()
	for {
		_, s, err := cl.coord.ValueTotals(ctx, storage.Query{}, true)
		if err != nil {
			return err
		}
		got := s.Interrupts - min(before, s.Interrupts)
		if got >= want {
			return nil
		}
		if got != last {
			last, lastChange = got, time.Now()
		} else if time.Since(lastChange) > stall {
			return nil // the conservation lines say what is missing
		}
		cl.cfg.Progress.Printf("waiting for value records: %d of the %d interrupts the hosts delivered are accounted for in storage", got, want)
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

// ValueLine is one host's (or the fleet's) value conservation, as the
// cluster stored it.
type ValueLine struct {
	Host     string // "fleet" for the sum
	Line     string
	Balanced bool
}

// ValueConservation is the interpreter's conservation of interrupts from
// what the cluster stored, per host and for the fleet, each against the
// interrupts that host's simulated hardware delivered (less what a
// continued fleet held before, base).
func (cl *Cluster) ValueConservation(ctx context.Context, base map[string]wire.ValueStats) ([]ValueLine, error) {
	var out []ValueLine
	var fleet wire.ValueStats
	var delivered uint64
	for _, h := range cl.hosts {
		_, s, err := cl.coord.ValueTotals(ctx, storage.Query{Hosts: []string{h.name}}, true)
		if err != nil {
			return nil, err
		}
		s = conservation.SubtractValues(s, base[h.name])
		n := h.Interrupts()
		line, ok := conservation.HostValuesLine(s, n)
		out = append(out, ValueLine{Host: h.name, Line: line, Balanced: ok})
		fleet.Add(s)
		delivered += n
	}
	line, ok := conservation.HostValuesLine(fleet, delivered)
	return append(out, ValueLine{Host: "fleet", Line: line, Balanced: ok}), nil
}
