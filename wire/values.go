package wire

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"dcpi/internal/bincodec"
	"dcpi/internal/hotlist"
)

// ValuesRecord is one host's value-sampling hot lists (DCPI value
// sampling, Burrows et al.; internal/hotlist): what its daemon drained
// from every CPU's driver since its previous record, merged per (image,
// offset, value type), with the interpreter's accounting. It travels on
// its own (magic "DCPV", versioned from 1), not inside a Batch: hot lists
// merge by Gibbons-Matias's rule, not by addition, and a host without
// value sampling sends none.
type ValuesRecord struct {
	Version uint16
	Host    string
	Epoch   uint64
	Seq     uint64 // per host, from 1: a redelivered record is applied once
	// Module names the customization module that captured the values
	// (node/valuemod).
	Module string
	Stats  ValueStats
	// Lists are sorted by (Image, Offset, Kind), unique, each list
	// non-empty (N > 0).
	Lists []ValueList
}

// ValueList is one instruction's hot list of one value type.
type ValueList struct {
	Image  ImageKey
	Offset uint64
	Kind   uint8 // a valuemod.Kind
	List   hotlist.List
}

// ValueStats is the interpreter's accounting of counter interrupts: every
// interrupt the sampler saw is NoContext (in vmunix or idle: nothing to
// interpret), Completed (its run interpreted to the end) or given up for
// one reason of GaveUp (pal, fault, trap, lock: alpha.StepStop's names).
// Values counts the values offered to hot lists, TableFull those lost to a
// full driver table, Unattributed those whose PC no image covered.
type ValueStats struct {
	Interrupts, NoContext, Completed uint64
	GaveUp                           map[string]uint64
	Steps                            uint64 // instructions interpreted
	Values, TableFull, Unattributed  uint64
}

// Conserved reports whether every interrupt is accounted for.
func (s ValueStats) Conserved() bool {
	n := s.NoContext + s.Completed
	for _, c := range s.GaveUp {
		n += c
	}
	return n == s.Interrupts
}

// Add adds o's counts to s.
func (s *ValueStats) Add(o ValueStats) {
	s.Interrupts += o.Interrupts
	s.NoContext += o.NoContext
	s.Completed += o.Completed
	s.Steps += o.Steps
	s.Values += o.Values
	s.TableFull += o.TableFull
	s.Unattributed += o.Unattributed
	for k, v := range o.GaveUp {
		if s.GaveUp == nil {
			s.GaveUp = map[string]uint64{}
		}
		s.GaveUp[k] += v
	}
}

// ValuesVersion is the version this build writes and reads.
const ValuesVersion = 1

const (
	valuesMagic = "DCPV"
	maxLists    = 1 << 20
	maxReasons  = 64
)

func checkValuesVersion(what string, v uint16) error {
	if v != ValuesVersion {
		return fmt.Errorf("wire: %s: %w %d (this build reads %d)", what, ErrVersion, v, ValuesVersion)
	}
	return nil
}

// CompareValueLists orders lists by (Image, Offset, Kind).
func CompareValueLists(a, b ValueList) int {
	if c := a.Image.Compare(b.Image); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Offset, b.Offset); c != 0 {
		return c
	}
	return cmp.Compare(a.Kind, b.Kind)
}

// Validate reports the first problem with r.
func (r *ValuesRecord) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("wire: values record: %w: %s", ErrInvalid, fmt.Sprintf(format, a...))
	}
	if r.Version != ValuesVersion {
		return fmt.Errorf("wire: values record: %w %d (this build writes %d)", ErrVersion, r.Version, ValuesVersion)
	}
	if err := CheckHost(r.Host); err != nil {
		return bad("%v", err)
	}
	if r.Epoch == 0 || r.Seq == 0 {
		return bad("epoch %d, seq %d: both start at 1", r.Epoch, r.Seq)
	}
	if r.Module == "" || len(r.Module) > 64 {
		return bad("module name %q", r.Module)
	}
	if !r.Stats.Conserved() {
		return bad("interrupts %d are not the sum of their outcomes", r.Stats.Interrupts)
	}
	if len(r.Stats.GaveUp) > maxReasons {
		return bad("%d give-up reasons", len(r.Stats.GaveUp))
	}
	for i, l := range r.Lists {
		if err := l.Image.Check(); err != nil {
			return bad("list %d: %v", i, err)
		}
		if l.Kind == 0 || l.List.N == 0 {
			return bad("list %d: kind %d, %d samples", i, l.Kind, l.List.N)
		}
		if err := l.List.Check(); err != nil {
			return bad("list %d: %v", i, err)
		}
		if i > 0 && CompareValueLists(r.Lists[i-1], l) >= 0 {
			return bad("list %d: not sorted or repeated", i)
		}
	}
	return nil
}

// MarshalBinary encodes a valid record:
//
//	magic "DCPV", version 2 bytes, then
//	host string, epoch, seq, module string (uvarints and strings),
//	stats: interrupts, no context, completed, steps, values, table full,
//	unattributed, then the give-up reasons (count, name and count each,
//	sorted by name),
//	lists: count, then each image key, offset, kind byte, hot list
//	(hotlist.List.AppendBinary),
//	and the CRC-32C trailer of every message.
func (r *ValuesRecord) MarshalBinary() ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	buf := appendHeader(nil, valuesMagic, r.Version)
	buf = bincodec.AppendString(buf, r.Host)
	for _, v := range []uint64{r.Epoch, r.Seq} {
		buf = bincodec.AppendUvarint(buf, v)
	}
	buf = bincodec.AppendString(buf, r.Module)
	s := r.Stats
	for _, v := range []uint64{s.Interrupts, s.NoContext, s.Completed, s.Steps, s.Values, s.TableFull, s.Unattributed} {
		buf = bincodec.AppendUvarint(buf, v)
	}
	reasons := slices.Sorted(maps.Keys(s.GaveUp))
	buf = bincodec.AppendUvarint(buf, uint64(len(reasons)))
	for _, k := range reasons {
		buf = bincodec.AppendString(buf, k)
		buf = bincodec.AppendUvarint(buf, s.GaveUp[k])
	}
	buf = bincodec.AppendUvarint(buf, uint64(len(r.Lists)))
	for _, l := range r.Lists {
		buf = l.Image.appendTo(buf)
		buf = bincodec.AppendUvarint(buf, l.Offset)
		buf = append(buf, l.Kind)
		buf = l.List.AppendBinary(buf)
	}
	return seal(buf, "values record")
}

// UnmarshalBinary decodes and validates a record from outside input; a
// record of another version is refused with ErrVersion. On error *r is
// left zero.
func (r *ValuesRecord) UnmarshalBinary(data []byte) error {
	*r = ValuesRecord{}
	body, v, err := frameVersions(data, valuesMagic, "values record", checkValuesVersion)
	if err != nil {
		return err
	}
	d := newDecoder(body)
	nr := ValuesRecord{Version: v}
	nr.Host = d.String("host", MaxHostLen)
	nr.Epoch = d.Uvarint("epoch")
	nr.Seq = d.Uvarint("seq")
	nr.Module = d.String("module", 64)
	s := &nr.Stats
	for _, p := range []*uint64{&s.Interrupts, &s.NoContext, &s.Completed, &s.Steps, &s.Values, &s.TableFull, &s.Unattributed} {
		*p = d.Uvarint("stats")
	}
	if n := d.Count("give-up reasons", maxReasons, 2); n > 0 {
		s.GaveUp = make(map[string]uint64, n)
		for range n {
			k := d.String("give-up reason", 64)
			s.GaveUp[k] = d.Uvarint("give-up count")
		}
	}
	n := d.Count("lists", maxLists, 6)
	if d.Err() == nil && n > 0 {
		nr.Lists = make([]ValueList, n)
		for i := range nr.Lists {
			l := &nr.Lists[i]
			l.Image = decodeImageKey(d, "list image")
			l.Offset = d.Uvarint("list offset")
			l.Kind = d.Byte("list kind")
			l.List = hotlist.Decode(d)
			if d.Err() != nil {
				break
			}
		}
	}
	d.End()
	if err := d.Err(); err != nil {
		return decodeError("values record", err)
	}
	if err := nr.Validate(); err != nil {
		return err
	}
	*r = nr
	return nil
}
