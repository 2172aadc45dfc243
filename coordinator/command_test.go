package coordinator

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"dcpi/internal/bincodec"
	"dcpi/storage"
	"dcpi/wire"
)

func sampleCommands(t testing.TB) []Command {
	r := testRand(t)
	at := time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC)
	return []Command{
		&Ingest{Deltas: []storage.Delta{randDelta(r, "h1", 0, 1, 4, 1, 20), randDelta(r, "h2", 3, 7, 0, 2, 5)}, Images: []*wire.ImageRecord{imageRec(1)}},
		&Ingest{},
		&Ingest{Deltas: []storage.Delta{randDelta(r, "h1", 0, 5, 6, 1, 3), hostFold(r, "h1", 1, 1)}},
		&RegisterNode{Host: "alpha1", CPUs: 4, Labels: map[string]string{"rack": "r1", "zone": "z"}, At: at},
		&RegisterNode{Host: "alpha2", CPUs: 1, At: at},
		&RegisterNode{Host: "alpha3", CPUs: 2, Periods: map[uint8]uint64{0: 63488, 1: 16384, 255: 1}, At: at},
		&CutEpoch{At: at},
		&ScheduledCut{Epoch: 1 << 40, At: at},
		&MergeEpochs{First: 2, Last: 9},
		&ExpireEpochs{Through: 1 << 40},
		&AckEpoch{Host: "alpha1", Epoch: 3, LastSeq: []uint64{1, 0, 99, 1 << 50}, At: at},
		&AckEpoch{Host: "alpha1", Epoch: 3, At: at},
		&SealEpoch{Epoch: 3, At: at},
		&StartEpochs{At: at},
		&PutProcesses{Host: "alpha1", Records: []*wire.ProcessRecord{
			{Version: wire.ProcessVersion, PID: 42, Epoch: 3, Start: at.UnixNano(), Binary: "/usr/bin/db", Labels: map[string]string{"role": "primary"}},
			{Version: wire.ProcessVersion, PID: 7, Epoch: 1, Binary: "/bin/sh"}}},
	}
}

func TestCommandRoundTrip(t *testing.T) {
	for _, c := range sampleCommands(t) {
		b, err := EncodeCommand(c)
		if err != nil {
			t.Fatalf("%T: %v", c, err)
		}
		got, err := DecodeCommand(b)
		if err != nil {
			t.Fatalf("%T: decode: %v", c, err)
		}
		if !reflect.DeepEqual(got, c) {
			t.Errorf("%T: round trip\n got %+v\nwant %+v", c, got, c)
		}
		// Every truncation is an error, never a panic.
		for n := range len(b) {
			if _, err := DecodeCommand(b[:n]); !errors.Is(err, ErrBadCommand) {
				t.Fatalf("%T truncated to %d of %d bytes: %v", c, n, len(b), err)
			}
		}
		if _, err := DecodeCommand(append(b, 0)); !errors.Is(err, ErrBadCommand) {
			t.Errorf("%T with a trailing byte: %v", c, err)
		}
	}
}

func TestCommandRejects(t *testing.T) {
	at := time.Unix(1e9, 0)
	r := testRand(t)
	bad := randDelta(r, "h", 0, 5, 0, 1, 3)
	bad.Last = 4
	badFold := hostFold(r, "h", 1, 2)
	badFold.Folded[1].CPU = badFold.Folded[0].CPU
	for _, c := range []Command{
		nil,
		&Ingest{Deltas: []storage.Delta{bad}},
		&Ingest{Deltas: []storage.Delta{badFold}},
		&Ingest{Deltas: []storage.Delta{{}}},
		&Ingest{Images: []*wire.ImageRecord{nil}},
		&RegisterNode{Host: "", CPUs: 1, At: at},
		&RegisterNode{Host: "h", CPUs: 0, At: at},
		&RegisterNode{Host: "h", CPUs: 1},
		&RegisterNode{Host: "h", CPUs: 1, Periods: map[uint8]uint64{1: 0}, At: at},
		&CutEpoch{},
		&ScheduledCut{Epoch: 0, At: at},
		&ScheduledCut{Epoch: 1},
		&MergeEpochs{First: 0, Last: 3},
		&MergeEpochs{First: 3, Last: 3},
		&ExpireEpochs{Through: 0},
		&AckEpoch{Host: "h", Epoch: 0, At: at},
		&SealEpoch{Epoch: 0, At: at},
		&PutProcesses{Host: "h"},
		&PutProcesses{Host: "", Records: []*wire.ProcessRecord{{Version: wire.ProcessVersion, PID: 1, Binary: "/bin/sh"}}},
		&PutProcesses{Host: "h", Records: []*wire.ProcessRecord{nil}},
		&PutProcesses{Host: "h", Records: []*wire.ProcessRecord{{Version: wire.ProcessVersion, PID: 0, Binary: "/bin/sh"}}},
	} {
		if _, err := EncodeCommand(c); !errors.Is(err, ErrBadCommand) {
			t.Errorf("EncodeCommand(%+v) = %v, want ErrBadCommand", c, err)
		}
	}
	for _, b := range [][]byte{nil, {}, {2, kindCut}, {commandVersion, 99}, {commandVersion}} {
		if _, err := DecodeCommand(b); !errors.Is(err, ErrBadCommand) {
			t.Errorf("DecodeCommand(%x) = %v, want ErrBadCommand", b, err)
		}
	}
}

// FuzzDecodeCommand: no input panics the decoder, and what it accepts
// encodes back to the same bytes (one encoding per command).
func FuzzDecodeCommand(f *testing.F) {
	for _, c := range sampleCommands(f) {
		b, err := EncodeCommand(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeCommand(b)
		if err != nil {
			if !errors.Is(err, ErrBadCommand) {
				t.Fatalf("error %v does not wrap ErrBadCommand", err)
			}
			return
		}
		again, err := EncodeCommand(c)
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", c, err)
		}
		if b[1] == kindRegisterV1 {
			// Written by an earlier build; re-encoded as kindRegister.
			if c2, err := DecodeCommand(again); err != nil || !reflect.DeepEqual(c2, c) || c.(*RegisterNode).Periods != nil {
				t.Fatalf("v1 register %+v re-decodes to %+v, %v", c, c2, err)
			}
			return
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs:\n in %x\nout %x", b, again)
		}
	})
}

// TestCommandDecodeErrors: a malformed command's error wraps ErrBadCommand
// and the codec's cause, and names the field.
func TestCommandDecodeErrors(t *testing.T) {
	at := bincodec.AppendTime(nil, time.Unix(1e9, 0))
	str := func(s string) []byte { return bincodec.AppendString(nil, s) }
	cmd := func(kind byte, parts ...[]byte) []byte {
		return bytes.Join(append([][]byte{{commandVersion, kind}}, parts...), nil)
	}
	// folds[0] is a batch of host "h" cpu 1, as a length-prefixed string.
	fb, err := (&wire.Batch{Version: wire.Version, Host: "h", CPU: 1, Seq: 1}).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	folds := [][]byte{bincodec.AppendBytes(nil, fb)}
	for _, tc := range []struct {
		name  string
		b     []byte
		cause error
		want  string
	}{
		{"seal epoch not minimal", cmd(kindSeal, []byte{0x83, 0x00}, at), bincodec.ErrMalformed, "epoch: varint not minimally encoded (at byte 2)"},
		{"cut time truncated", cmd(kindCut, at[:5]), bincodec.ErrTruncated, "at: truncated"},
		{"register host cap", cmd(kindRegister, bincodec.AppendUvarint(nil, wire.MaxHostLen+1)), bincodec.ErrTooLarge, "host: 256 bytes (cap 255)"},
		{"register cpus range", cmd(kindRegister, str("h"), bincodec.AppendUvarint(nil, storage.MaxCPUs+1)), bincodec.ErrMalformed, "cpus: 65536 exceeds 65535"},
		{"register labels order", cmd(kindRegister, str("h"), []byte{1}, at, []byte{2}, str("b"), str(""), str("a"), str("")), bincodec.ErrMalformed, `label "a": not after "b"`},
		{"register no periods", cmd(kindRegister, str("h"), []byte{1}, at, []byte{0}), bincodec.ErrTruncated, "periods: truncated"},
		{"register periods cap", cmd(kindRegister, str("h"), []byte{1}, at, []byte{0}, bincodec.AppendUvarint(nil, storage.MaxPeriods+1)), bincodec.ErrTooLarge, "periods: 257 (cap 256)"},
		{"register period order", cmd(kindRegister, str("h"), []byte{1}, at, []byte{0}, []byte{2, 3, 1, 3, 1}), bincodec.ErrMalformed, "period of event 3: not after event 3"},
		{"register period zero", cmd(kindRegister, str("h"), []byte{1}, at, []byte{0}, []byte{1, 3, 0}), bincodec.ErrMalformed, "period of event 3: 0"},
		{"register v1 trailing periods", cmd(kindRegisterV1, str("h"), []byte{1}, at, []byte{0}, []byte{0}), bincodec.ErrMalformed, "1 trailing bytes"},
		{"ack seqs cap", cmd(kindAck, str("h"), []byte{1}, bincodec.AppendUvarint(nil, storage.MaxCPUs+2)), bincodec.ErrTooLarge, "last seqs: 65537 (cap 65536)"},
		{"ingest batch", cmd(kindIngest, []byte{1, 0}, str("DCPB")), bincodec.ErrMalformed, "delta 0: wire: batch: malformed"},
		{"ingest folds none", cmd(kindIngestFolds, []byte{1, 0}, folds[0], []byte{0, 0}), bincodec.ErrMalformed, "no delta is a host fold"},
		{"ingest folds cpu", cmd(kindIngestFolds, []byte{1, 0}, folds[0], []byte{1, 0x84, 0x80, 0x04, 1, 1, 0, 0, 0}), bincodec.ErrMalformed, "folded cpu: 65540 exceeds 65535"},
		{"ingest folds truncated", cmd(kindIngestFolds, []byte{1, 0}, folds[0], []byte{1, 2, 1, 0x80, 0x01, 0}), bincodec.ErrTruncated, "folded accounted: truncated"},
		{"ingest folds order", cmd(kindIngestFolds, []byte{1, 0}, folds[0], []byte{2, 2, 1, 1, 0, 0, 2, 1, 1, 0, 0, 0}), bincodec.ErrMalformed, "delta 0: storage: invalid: host fold (host \"h\") run 1: cpu 2 not after cpu 2"},
		{"ingest folds count", cmd(kindIngestFolds, []byte{1, 0}, folds[0], bincodec.AppendUvarint(nil, storage.MaxFolded+1)), bincodec.ErrTooLarge, "folded runs: 65536 (cap 65535)"},
		{"trailing", append(cmd(kindStart, at), 0), bincodec.ErrMalformed, "1 trailing bytes (at byte 10)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeCommand(tc.b)
			if !errors.Is(err, ErrBadCommand) || !errors.Is(err, tc.cause) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want ErrBadCommand and %v containing %q", err, tc.cause, tc.want)
			}
		})
	}
}

// hostFold is a host fold of host's streams 0..cpus (cpus+1 of them; the
// last is the daemon's AllCPUs stream) at seq first, in epoch 1, as an
// aggregator builds one: the runs' entries merged, each run's accounting.
func hostFold(r *rand.Rand, host string, first uint64, cpus int) storage.Delta {
	m := &wire.Batch{Version: wire.Version, Host: host, Seq: first, Epoch: 1}
	d := storage.Delta{Batch: m}
	for cpu := range cpus + 1 {
		c := uint16(cpu)
		if cpu == cpus {
			c = wire.AllCPUs
		}
		b := randDelta(r, host, c, first, first, 1, 4).Batch
		m.Entries = append(m.Entries, b.Entries...)
		m.Unknown = append(m.Unknown, b.Unknown...)
		if cpu > 0 {
			d.Folded = append(d.Folded, storage.StreamRun{CPU: c, First: first, Last: first + uint64(cpu), Delivered: 10, Accounted: uint64(cpu)})
		}
	}
	m.Normalize()
	return d
}
