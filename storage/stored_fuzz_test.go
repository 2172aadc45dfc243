package storage

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"

	"dcpi/internal/bincodec"
	"dcpi/internal/hotlist"
	"dcpi/wire"
)

// The stored values and keys FuzzDecodeStored feeds, by its input's first
// byte (modulo their number); the rest of the input is the value or key.
const (
	storedEpoch = iota
	storedStream
	storedCountsKey
	storedHostsKey
	storedCount
	storedPathUpload
	storedList
	storedStack
	storedValueStats
	storedValueSeq
	storedKinds
)

// FuzzDecodeStored: no stored value or key panics its decoder (epochs,
// stream states, counts keys, hosts keys, counters, path upload records,
// hot lists, stacks, value statistics, value sequence numbers; nodes and
// acknowledgements are FuzzDecodeRegistry's); a failure wraps ErrCorrupt,
// and what decodes encodes back to the same value (keys, counters and
// path upload records to the same bytes), with the encoder accepting it.
func FuzzDecodeStored(f *testing.F) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	add := func(kind byte, b []byte) { f.Add(append([]byte{kind}, b...)) }
	for _, e := range []Epoch{{Number: 1, State: EpochOpen, Start: at}, {Number: 2, State: EpochSealed, Start: at, End: at.Add(time.Hour)}, {Number: 3, State: EpochClosing}} {
		v, err := encodeEpoch(&e)
		if err != nil {
			f.Fatal(err)
		}
		add(storedEpoch, v)
	}
	add(storedStream, appliedValue(StreamState{Seq: 7}))
	add(storedStream, appliedValue(StreamState{Seq: 7, Delivered: 9, Accounted: 8}))
	img := wire.MustParseImageKey("buildid:0123456789abcdef")
	e := wire.Entry{Event: 2, Image: img, Offset: 0x1234, PID: 77}
	add(storedCountsKey, countsKey(nil, 5, &e, "alpha1"))
	add(storedCountsKey, fleetKey(nil, 5, &e))
	add(storedHostsKey, hostsKey(nil, 5, "alpha1", &e))
	add(storedCount, appendU64(nil, 1<<40))
	add(storedPathUpload, encodePathUploadRecord(&PathUploadRecord{Source: wire.SourceOracle, Image: img}))
	add(storedPathUpload, encodePathUploadRecord(&PathUploadRecord{Source: wire.SourceInstrumented, Image: img, Refused: "path counts differ"}))
	add(storedList, (&hotlist.List{N: 3, Entries: []hotlist.Entry{{Value: 1, Count: 1}, {Value: 5, Count: 2}}}).AppendBinary(nil))
	other := wire.MustParseImageKey("sha256:ab0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcd")
	add(storedStack, encodeStack(false, []wire.Frame{{Image: img, Offset: 0x10}, {Image: other, Offset: 0x2000}, {Image: img, Offset: 0x44}}))
	add(storedStack, encodeStack(true, []wire.Frame{{Image: img, Offset: 0}}))
	add(storedValueStats, encodeValueStats("divide", 12, wire.ValueStats{Interrupts: 10, Completed: 7, NoContext: 1, GaveUp: map[string]uint64{"fault": 1, "steps": 1}, Steps: 300, Values: 7}))
	add(storedValueStats, encodeValueStats("", 0, wire.ValueStats{}))
	add(storedValueSeq, bincodec.AppendUvarint(nil, 300))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		kind, v := b[0]%storedKinds, b[1:]
		corrupt := func(what string, err error) bool {
			t.Helper()
			if err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s: error %v does not wrap ErrCorrupt", what, err)
			}
			return err != nil
		}
		same := func(what string, in, out any, again []byte, err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("decoded %s %+v does not re-decode: %v (%x)", what, in, err, again)
			}
			if !reflect.DeepEqual(in, out) {
				t.Fatalf("%s re-decodes differently:\n in %+v\nout %+v", what, in, out)
			}
		}
		sameBytes := func(what string, again []byte) {
			t.Helper()
			if !bytes.Equal(again, v) {
				t.Fatalf("%s re-encodes differently:\n in %x\nout %x", what, v, again)
			}
		}
		switch kind {
		case storedEpoch:
			ep, err := decodeEpoch(9, v)
			if corrupt("epoch", err) {
				return
			}
			again, err := encodeEpoch(&ep)
			if err != nil {
				t.Fatalf("decoded epoch %+v does not encode: %v", ep, err)
			}
			ep2, err := decodeEpoch(9, again)
			same("epoch", ep, ep2, again, err)
		case storedStream:
			st, err := decodeStreamState(v)
			if err != nil {
				return // the caller wraps ErrCorrupt
			}
			again := appliedValue(st)
			st2, err := decodeStreamState(again)
			same("stream state", st, st2, again, err)
		case storedCountsKey:
			r, err := decodeCountsKey(v)
			if corrupt("counts key", err) {
				return
			}
			e := wire.Entry{Event: r.event, Image: r.image, Offset: r.offset, PID: r.pid}
			if v[0] == tFleet {
				sameBytes("fleet key", fleetKey(nil, r.epoch, &e))
			} else {
				sameBytes("counts key", countsKey(nil, r.epoch, &e, r.host))
			}
		case storedHostsKey:
			r, err := decodeHostsKey(v)
			if corrupt("hosts key", err) {
				return
			}
			e := wire.Entry{Event: r.event, Image: r.image, Offset: r.offset, PID: r.pid}
			sameBytes("hosts key", hostsKey(nil, r.epoch, r.host, &e))
		case storedCount:
			c, err := decodeCount([]byte("k"), v)
			if corrupt("count", err) {
				return
			}
			sameBytes("count", appendU64(nil, c))
		case storedPathUpload:
			r, err := decodePathUploadRecord("h", wire.UploadID{1}, v)
			if corrupt("path upload record", err) {
				return
			}
			sameBytes("path upload record", encodePathUploadRecord(&r))
		case storedList:
			l, err := decodeList([]byte("k"), v)
			if corrupt("hot list", err) {
				return
			}
			if err := l.Check(); err != nil {
				t.Fatalf("decoded an invalid hot list: %v", err)
			}
			again := l.AppendBinary(nil)
			l2, err := decodeList([]byte("k"), again)
			same("hot list", l, l2, again, err)
		case storedStack:
			st, err := decodeStack(3, v)
			if corrupt("stack", err) {
				return
			}
			if len(st.Frames) == 0 || len(st.Frames) > wire.MaxStackFrames {
				t.Fatalf("decoded stack of %d frames", len(st.Frames))
			}
			again := encodeStack(st.Truncated, st.Frames)
			st2, err := decodeStack(3, again)
			same("stack", st, st2, again, err)
		case storedValueStats:
			module, seq, s, err := decodeValueStats(v)
			if corrupt("value stats", err) {
				return
			}
			again := encodeValueStats(module, seq, s)
			module2, seq2, s2, err := decodeValueStats(again)
			same("value stats", []any{module, seq, s}, []any{module2, seq2, s2}, again, err)
		case storedValueSeq:
			seq, err := decodeValueSeq("h", v)
			if corrupt("value seq", err) {
				return
			}
			sameBytes("value seq", bincodec.AppendUvarint(nil, seq))
		}
	})
}
