package node

import (
	"errors"

	"slices"

	"dcpi/hwsim/alpha"
	"dcpi/internal/hotlist"
	"dcpi/wire"
)

// ValuesPublisher is a Publisher that also carries value-sampling records.
// A node with value sampling on needs one.
type ValuesPublisher interface {
	Publisher
	PublishValues(r *wire.ValuesRecord) error
}

// valuesDaemon is the daemon's side of value sampling.
type valuesDaemon struct {
	samplers []*valueSampler
	pub      ValuesPublisher
	module   string
	seq      uint64
	total    wire.ValueStats // every record's, for ValueTotals
	coins    *hotlist.Coin
}

// listKey names one hot list after attribution.
type listKey struct {
	image  wire.ImageKey
	offset uint64
	kind   uint8
}

// newValuesDaemon builds every CPU's sampler; nil with value sampling off.
func newValuesDaemon(cfg ValuesConfig, cpus int, pub Publisher) (*valuesDaemon, error) {
	if cfg.Module == "" {
		return nil, nil
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	vp, ok := pub.(ValuesPublisher)
	if !ok {
		return nil, errNoValuesPublisher
	}
	vd := &valuesDaemon{pub: vp, module: cfg.Module, coins: hotlist.NewCoin(cfg.Seed ^ 0xd1ce)}
	if cfg.FirstSeq > 0 {
		vd.seq = cfg.FirstSeq - 1
	}
	for cpu := range cpus {
		s, err := newValueSampler(cfg, cpu)
		if err != nil {
			return nil, err
		}
		vd.samplers = append(vd.samplers, s)
	}
	return vd, nil
}

// drainValues takes every CPU's value table (by IPI, or directly once the
// host has stopped), merges the lists per (image, offset, value type) —
// Gibbons-Matias's merge, the smaller τ thinned first — and publishes one
// record for the host.
func (n *Node) drainValues(direct bool) error {
	vd := n.values
	if vd == nil {
		return nil
	}
	merged := map[listKey]hotlist.List{}
	var stats wire.ValueStats
	for cpu, s := range vd.samplers {
		var t *valueTable
		var st ValueStats
		if direct {
			t, st = s.swap()
		} else if err := n.ipi(cpu, func(*Driver) { t, st = s.swap() }); err != nil {
			return err
		}
		stats.Add(st.wire())
		for i, k := range t.keys {
			if k == (valueKey{}) {
				continue
			}
			l := &t.lists[i]
			m, off, _, ok := n.maps.Resolve(k.inc, k.pc)
			var img wire.ImageKey
			var err error
			if ok {
				img, err = wire.ParseImageKey(m.Image)
			}
			if !ok || err != nil {
				stats.Unattributed += l.N
				continue
			}
			lk := listKey{image: img, offset: off, kind: uint8(k.kind)}
			if have, seen := merged[lk]; seen {
				merged[lk] = hotlist.Merge(&have, l, vd.coins)
			} else {
				merged[lk] = l.Clone()
			}
		}
		s.giveBack(t)
	}
	if stats.Interrupts == 0 {
		return nil
	}
	n.mu.Lock()
	epoch := n.books.Epoch()
	n.mu.Unlock()
	vd.seq++
	r := &wire.ValuesRecord{Version: wire.ValuesVersion, Host: n.cfg.Host, Epoch: epoch, Seq: vd.seq,
		Module: vd.module, Stats: stats}
	for k, l := range merged {
		r.Lists = append(r.Lists, wire.ValueList{Image: k.image, Offset: k.offset, Kind: k.kind, List: l})
	}
	slices.SortFunc(r.Lists, wire.CompareValueLists)
	n.mu.Lock()
	vd.total.Add(stats)
	n.mu.Unlock()
	return vd.pub.PublishValues(r)
}

// wire converts a CPU's counters to the record's.
func (st ValueStats) wire() wire.ValueStats {
	w := wire.ValueStats{Interrupts: st.Interrupts, NoContext: st.NoContext, Completed: st.Completed,
		Steps: st.Steps, Values: st.Values, TableFull: st.TableFull}
	for i, c := range st.GaveUp {
		if c > 0 {
			if w.GaveUp == nil {
				w.GaveUp = map[string]uint64{}
			}
			w.GaveUp[alpha.StepStop(i).String()] += c
		}
	}
	return w
}

// ValueTotals returns the interpreter's accounting over every record the
// node has published (zero with value sampling off); call it after Finish.
func (n *Node) ValueTotals() wire.ValueStats {
	if n.values == nil {
		return wire.ValueStats{}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	t := n.values.total
	t.GaveUp = cloneCounts(t.GaveUp)
	return t
}

// ValuesMemoryBytes is one CPU's value-sampling memory: its two tables.
func (n *Node) ValuesMemoryBytes() int {
	if n.values == nil || len(n.values.samplers) == 0 {
		return 0
	}
	return 2 * n.values.samplers[0].active.memoryBytes()
}

func cloneCounts(m map[string]uint64) map[string]uint64 {
	if m == nil {
		return nil
	}
	out := make(map[string]uint64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// PublishValues encodes r, decodes it again and keeps the copy.
func (p *MemPublisher) PublishValues(r *wire.ValuesRecord) error {
	data, err := r.MarshalBinary()
	if err != nil {
		return err
	}
	var c wire.ValuesRecord
	if err := c.UnmarshalBinary(data); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.values = append(p.values, &c)
	return nil
}

// Values returns the value records published so far, in order.
func (p *MemPublisher) Values() []*wire.ValuesRecord {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.values)
}

var errNoValuesPublisher = errors.New("node: value sampling needs a publisher that carries value records (ValuesPublisher)")
