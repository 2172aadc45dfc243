package hotlist

import "dcpi/internal/bincodec"

// AppendBinary appends l's encoding to buf: τ's shift (a byte), N, the
// number of values, then each value as the difference from the previous
// one (the first from 0) and its count, all uvarints.
func (l *List) AppendBinary(buf []byte) []byte {
	buf = append(buf, l.Shift)
	buf = bincodec.AppendUvarint(buf, l.N)
	buf = bincodec.AppendUvarint(buf, uint64(len(l.Entries)))
	var prev uint64
	for _, e := range l.Entries {
		buf = bincodec.AppendUvarint(buf, e.Value-prev)
		buf = bincodec.AppendUvarint(buf, e.Count)
		prev = e.Value
	}
	return buf
}

// Decode reads a list AppendBinary wrote from d, checking it (Check); on
// failure d holds the error.
func Decode(d *bincodec.Decoder) List {
	var l List
	l.Shift = d.Byte("hot list tau")
	l.N = d.Uvarint("hot list samples")
	n := d.Count("hot list values", M, 2)
	if d.Err() != nil {
		return List{}
	}
	l.Entries = make([]Entry, n)
	var prev uint64
	for i := range l.Entries {
		delta := d.Uvarint("hot list value")
		if i > 0 && delta == 0 {
			d.Fail(ErrInvalid, "hot list value %d repeats %#x", i, prev)
		}
		prev += delta
		l.Entries[i] = Entry{Value: prev, Count: d.Uvarint("hot list count")}
		if d.Err() != nil {
			return List{}
		}
	}
	if err := l.Check(); err != nil {
		d.Fail(ErrInvalid, "%v", err)
		return List{}
	}
	return l
}
