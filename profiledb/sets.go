package profiledb

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"dcpi/analysis"
	"dcpi/profiledb/selector"
	"dcpi/profiledb/timerange"
	"dcpi/storage"
)

// SampleSets builds the sets of --set, --by-host or --by-epoch over base.
func SampleSets(ctx context.Context, db DB, base storage.Query, specs []string, byHost, byEpoch bool) ([]analysis.SampleSet, error) {
	n := 0
	for _, b := range []bool{len(specs) > 0, byHost, byEpoch} {
		if b {
			n++
		}
	}
	if n != 1 {
		return nil, fmt.Errorf("give the sample sets one way: --set SPEC (repeatable), --by-host or --by-epoch")
	}
	var out []analysis.SampleSet
	switch {
	case byHost:
		hosts := base.Hosts
		if hosts == nil {
			var err error
			if hosts, err = db.Hosts(ctx); err != nil {
				return nil, fmt.Errorf("--by-host: %w", err)
			}
		}
		for _, h := range hosts {
			q := base
			q.Hosts = []string{h}
			out = append(out, analysis.SampleSet{Name: "host=" + h, Filter: q})
		}
	case byEpoch:
		epochs := base.Epochs
		if epochs == nil {
			var err error
			if epochs, err = db.EpochNumbers(ctx); err != nil {
				return nil, fmt.Errorf("--by-epoch: %w", err)
			}
			if len(epochs) == 0 {
				return nil, fmt.Errorf("--by-epoch: the database lists no epochs (a dcpi node database has no epoch records); give them with --epochs A-B")
			}
		}
		for _, e := range slices.Compact(slices.Sorted(slices.Values(epochs))) {
			q := base
			q.Epochs = []uint64{e}
			out = append(out, analysis.SampleSet{Name: "epoch=" + strconv.FormatUint(e, 10), Filter: q})
		}
	default:
		for _, s := range specs {
			set, err := ParseSetSpec(ctx, db, base, s)
			if err != nil {
				return nil, err
			}
			out = append(out, set)
		}
	}
	return out, nil
}

// ParseSetSpec parses one --set SPEC over base: each key replaces base's
// selection along its dimension (labels narrow the hosts). since=, from=
// and to= are a wall-clock range, as the flags of the same names: they
// name the set's epochs, so they exclude epoch= and epochs=, and the
// set's name says which epochs and what span they covered.
func ParseSetSpec(ctx context.Context, db DB, base storage.Query, spec string) (analysis.SampleSet, error) {
	q := base
	name := spec
	var tf timerange.Flags
	var epochs, hosts []string
	var pids []uint32
	var labels selector.Selector
	if strings.TrimSpace(spec) == "" {
		return analysis.SampleSet{}, fmt.Errorf("set %q: empty", spec)
	}
	for _, part := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || v == "" {
			return analysis.SampleSet{}, fmt.Errorf("set %q: %q is not KEY=VALUE (keys: %s)", spec, part, setKeys)
		}
		switch k {
		case "epoch", "epochs":
			epochs = append(epochs, v)
		case "since", "from", "to":
			p := map[string]*string{"since": &tf.Since, "from": &tf.From, "to": &tf.To}[k]
			if *p != "" {
				return analysis.SampleSet{}, fmt.Errorf("set %q: %s given twice", spec, k)
			}
			*p = v
		case "host":
			hosts = append(hosts, v)
		case "pid":
			p, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				return analysis.SampleSet{}, fmt.Errorf("set %q: pid %q: want a process number", spec, v)
			}
			pids = append(pids, uint32(p))
		case "label":
			// One matcher: label=service=db, label=version=~1\..*
			m, err := selector.Parse(v)
			if err != nil {
				return analysis.SampleSet{}, fmt.Errorf("set %q: label %q: %w", spec, v, err)
			}
			labels = append(labels, m...)
		default:
			return analysis.SampleSet{}, fmt.Errorf("set %q: unknown key %q (keys: %s)", spec, k, setKeys)
		}
	}
	if tf.Given() {
		if epochs != nil {
			return analysis.SampleSet{}, fmt.Errorf("set %q: give either a time range (since, from, to) or epoch/epochs, not both", spec)
		}
		var err error
		if q.Epochs, name, err = setTime(ctx, db, spec, tf); err != nil {
			return analysis.SampleSet{}, err
		}
	}
	if epochs != nil {
		q.Epochs = nil
		for _, e := range epochs {
			lo, hi, err := ParseEpochRange(e)
			if err != nil {
				return analysis.SampleSet{}, fmt.Errorf("set %q: %w", spec, err)
			}
			if q.Epochs, err = appendEpochRange(q.Epochs, lo, hi); err != nil {
				return analysis.SampleSet{}, fmt.Errorf("set %q: %w", spec, err)
			}
		}
	}
	if hosts != nil {
		q.Hosts = hosts
	}
	if pids != nil {
		q.PIDs = pids
	}
	if len(labels) > 0 {
		if err := selectHosts(ctx, db, labels, &q); err != nil {
			return analysis.SampleSet{}, fmt.Errorf("set %q: %w", spec, err)
		}
	}
	return analysis.SampleSet{Name: name, Filter: q}, nil
}

// setKeys are the keys of a set SPEC, for messages.
const setKeys = "epoch, epochs, since, from, to, host, label, pid"
