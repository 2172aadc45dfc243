package aggregator

import (
	"fmt"
	"slices"

	"dcpi/internal/hotlist"
	"dcpi/wire"
)

// MergeValues merges a run of one host's value records of one epoch, in
// Seq order, into one record, as the aggregator merges a run of batches
// into a delta: hot lists by Gibbons-Matias's rule (internal/hotlist: the
// list with the smaller τ is thinned by coin tosses first, so the merged
// τ·c stays unbiased; adding counts across different τ would not),
// accounting by addition. The merged record carries the last Seq, so the
// database's redelivery check still holds. Coins are seeded from the
// lists merged, so a retried merge proposes the same record.
func MergeValues(run []*wire.ValuesRecord) (*wire.ValuesRecord, error) {
	if len(run) == 0 {
		return nil, fmt.Errorf("aggregator: merge values: empty run")
	}
	first := run[0]
	out := &wire.ValuesRecord{Version: first.Version, Host: first.Host, Epoch: first.Epoch, Seq: first.Seq, Module: first.Module}
	type key struct {
		image  wire.ImageKey
		offset uint64
		kind   uint8
	}
	merged := map[key]hotlist.List{}
	for i, r := range run {
		if r.Host != first.Host || r.Epoch != first.Epoch || r.Module != first.Module {
			return nil, fmt.Errorf("aggregator: merge values: record %d is %s epoch %d module %s, the run's %s epoch %d module %s",
				i, r.Host, r.Epoch, r.Module, first.Host, first.Epoch, first.Module)
		}
		if i > 0 && r.Seq <= run[i-1].Seq {
			return nil, fmt.Errorf("aggregator: merge values: seq %d after %d", r.Seq, run[i-1].Seq)
		}
		out.Seq = r.Seq
		out.Stats.Add(r.Stats)
		for _, l := range r.Lists {
			k := key{l.Image, l.Offset, l.Kind}
			if have, ok := merged[k]; ok {
				merged[k] = hotlist.Merge(&have, &l.List, hotlist.NewCoin(hotlist.Seed(&have, &l.List)))
			} else {
				merged[k] = l.List.Clone()
			}
		}
	}
	for k, l := range merged {
		out.Lists = append(out.Lists, wire.ValueList{Image: k.image, Offset: k.offset, Kind: k.kind, List: l})
	}
	slices.SortFunc(out.Lists, wire.CompareValueLists)
	return out, out.Validate()
}
