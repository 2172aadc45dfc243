package profiledb

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"dcpi/analysis"
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
// selection along its dimension (labels narrow the hosts).
func ParseSetSpec(ctx context.Context, db DB, base storage.Query, spec string) (analysis.SampleSet, error) {
	q := base
	var epochs, hosts []string
	var pids []uint32
	labels := map[string]string{}
	if strings.TrimSpace(spec) == "" {
		return analysis.SampleSet{}, fmt.Errorf("set %q: empty", spec)
	}
	for _, part := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || v == "" {
			return analysis.SampleSet{}, fmt.Errorf("set %q: %q is not KEY=VALUE (keys: epoch, epochs, host, label, pid)", spec, part)
		}
		switch k {
		case "epoch", "epochs":
			epochs = append(epochs, v)
		case "host":
			hosts = append(hosts, v)
		case "pid":
			p, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				return analysis.SampleSet{}, fmt.Errorf("set %q: pid %q: want a process number", spec, v)
			}
			pids = append(pids, uint32(p))
		case "label":
			lk, lv, ok := strings.Cut(v, "=")
			if !ok || lk == "" {
				return analysis.SampleSet{}, fmt.Errorf("set %q: label %q: want label=KEY=VALUE", spec, v)
			}
			labels[lk] = lv
		default:
			return analysis.SampleSet{}, fmt.Errorf("set %q: unknown key %q (keys: epoch, epochs, host, label, pid)", spec, k)
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
		if err := db.SelectLabels(ctx, labels, &q); err != nil {
			return analysis.SampleSet{}, fmt.Errorf("set %q: %w", spec, err)
		}
	}
	return analysis.SampleSet{Name: spec, Filter: q}, nil
}
