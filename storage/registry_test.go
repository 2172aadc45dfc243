package storage

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"dcpi/internal/bincodec"
)

func TestRegistryRoundTrip(t *testing.T) {
	db, dir := openTest(t)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	nodes := []Node{
		{Host: "alpha1", CPUs: 4, Labels: map[string]string{"rack": "r1", "role": ""}, Registered: t0, Updated: t0.Add(time.Second),
			Periods: map[uint8]uint64{0: 63488, 1: 16384}},
		{Host: "alpha2", CPUs: 1},
	}
	acks := []EpochAck{
		{Epoch: 3, Host: "alpha1", LastSeq: []uint64{5, 0, 1 << 40, 7, 2}, At: t0},
		{Epoch: 3, Host: "alpha2", Late: true, At: t0},
		{Epoch: 4, Host: "alpha1", LastSeq: []uint64{9}},
	}
	var m Meta
	for _, n := range nodes {
		if err := m.PutNode(n); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range acks {
		if err := m.PutEpochAck(a); err != nil {
			t.Fatal(err)
		}
	}
	m.SetLogIndex(42)
	if err := db.CommitMeta(&m); err != nil {
		t.Fatal(err)
	}
	check := func(db *DB) {
		t.Helper()
		got, err := db.Nodes()
		if err != nil || !reflect.DeepEqual(got, nodes) {
			t.Errorf("Nodes = %+v %v\nwant %+v", got, err, nodes)
		}
		ga, err := db.EpochAcks(3)
		if err != nil || !reflect.DeepEqual(ga, acks[:2]) {
			t.Errorf("EpochAcks(3) = %+v %v", ga, err)
		}
		if a, err := db.EpochAck(4, "alpha1"); err != nil || !reflect.DeepEqual(a, acks[2]) {
			t.Errorf("EpochAck(4) = %+v %v", a, err)
		}
		if _, err := db.EpochAck(4, "alpha2"); !errors.Is(err, ErrNotFound) {
			t.Errorf("missing ack: %v", err)
		}
		if n, err := db.Node("alpha1"); err != nil || !reflect.DeepEqual(n, nodes[0]) {
			t.Errorf("Node = %+v %v", n, err)
		}
		if i, err := db.LogIndex(); i != 42 || err != nil {
			t.Errorf("LogIndex = %d %v", i, err)
		}
	}
	check(db)
	db.Close()
	db2, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	check(db2)
}

func TestRegistryInvalid(t *testing.T) {
	var m Meta
	bad := []Node{
		{Host: "", CPUs: 1},
		{Host: "a", CPUs: 0},
		{Host: "a", CPUs: MaxCPUs + 1},
		{Host: "a", CPUs: 1, Labels: map[string]string{"": "x"}},
		{Host: "a\x00b", CPUs: 1},
		{Host: "a", CPUs: 1, Periods: map[uint8]uint64{3: 0}},
	}
	for _, n := range bad {
		if err := m.PutNode(n); !errors.Is(err, ErrInvalid) {
			t.Errorf("PutNode(%+v) = %v, want ErrInvalid", n, err)
		}
	}
	if err := m.PutEpochAck(EpochAck{Epoch: 1, Host: "a", LastSeq: make([]uint64, MaxCPUs+2)}); !errors.Is(err, ErrInvalid) {
		t.Errorf("oversized ack: %v", err)
	}
	if m.Len() != 0 {
		t.Errorf("%d writes collected from invalid records", m.Len())
	}
}

// FuzzDecodeRegistry: no stored value panics the decoders; a failure wraps
// ErrCorrupt, and what they accept encodes back to the same bytes (one
// encoding per record).
func FuzzDecodeRegistry(f *testing.F) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, n := range []Node{
		{Host: "h", CPUs: 2, Labels: map[string]string{"a": "b"}},
		{Host: "h", CPUs: MaxCPUs, Labels: map[string]string{"rack": "r1", "role": "", "zone": "é"}, Registered: at, Updated: at},
		{Host: "h", CPUs: 1, Periods: map[uint8]uint64{0: 63488, 4: 1, 255: 1 << 63}},
	} {
		v, err := encodeNode(&n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(v)
	}
	for _, a := range []EpochAck{
		{Host: "h", Epoch: 1, LastSeq: []uint64{1, 2}},
		{Host: "h", Epoch: 1, LastSeq: []uint64{0, 127, 128, 1 << 63}, Late: true, At: at},
	} {
		v, err := encodeAck(&a)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		check := func(what string, err error, encode func() ([]byte, error)) {
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("%s: error %v does not wrap ErrCorrupt", what, err)
				}
				return
			}
			again, err := encode()
			if err != nil {
				t.Fatalf("decoded %s does not encode: %v", what, err)
			}
			if !bytes.Equal(again, v) {
				t.Fatalf("%s re-encodes differently:\n in %x\nout %x", what, v, again)
			}
		}
		n, err := decodeNode("h", v)
		if err == nil && v[0] == nodeRecordVersionV1 {
			// A version 1 record re-encodes as version 2: the same
			// node, with no periods.
			again, err := encodeNode(&n)
			if err != nil {
				t.Fatalf("decoded v1 node does not encode: %v", err)
			}
			if n2, err := decodeNode("h", again); err != nil || !reflect.DeepEqual(n2, n) || n.Periods != nil {
				t.Fatalf("v1 node %+v re-decodes to %+v, %v", n, n2, err)
			}
		} else {
			check("node", err, func() ([]byte, error) { return encodeNode(&n) })
		}
		a, err := decodeAck(1, "h", v)
		check("ack", err, func() ([]byte, error) { return encodeAck(&a) })
	})
}

func TestRegistryDecodeErrors(t *testing.T) {
	zeroTimes := make([]byte, 16)
	node := func(parts ...[]byte) []byte {
		return bytes.Join(append([][]byte{{nodeRecordVersion, 1}, zeroTimes}, parts...), nil)
	}
	ack := func(parts ...[]byte) []byte { return bytes.Join(append([][]byte{{ackRecordVersion}}, parts...), nil) }
	str := func(s string) []byte { return bincodec.AppendString(nil, s) }
	for _, tc := range []struct {
		name  string
		node  bool
		v     []byte
		cause error // besides ErrCorrupt; nil: none from the codec
		want  string
	}{
		{"node empty", true, nil, bincodec.ErrTruncated, "record version: truncated"},
		{"node version", true, []byte{3}, nil, "record version 3"},
		{"node cpus range", true, []byte{nodeRecordVersion, 0xff, 0xff, 0x04}, bincodec.ErrMalformed, "cpus: 81919 exceeds 65535"},
		{"node cpus not minimal", true, []byte{nodeRecordVersion, 0x81, 0x00}, bincodec.ErrMalformed, "cpus: varint not minimally encoded"},
		{"node registered", true, []byte{nodeRecordVersion, 1, 0, 0, 0}, bincodec.ErrTruncated, "registered: truncated"},
		{"node labels cap", true, node([]byte{MaxLabels + 1}), bincodec.ErrTooLarge, "labels: 65 (cap 64)"},
		{"node label order", true, node([]byte{2}, str("b"), str(""), str("a"), str("")), bincodec.ErrMalformed, `label "a": not after "b"`},
		{"node label value cap", true, node([]byte{1}, str("k"), bincodec.AppendUvarint(nil, MaxLabelValLen+1)), bincodec.ErrTooLarge, "label value: 1025 bytes"},
		{"node trailing", true, node([]byte{0, 0, 0}), bincodec.ErrMalformed, "1 trailing bytes"},
		{"node v1 trailing", true, append([]byte{nodeRecordVersionV1, 1}, append(zeroTimes, 0, 0)...), bincodec.ErrMalformed, "1 trailing bytes"},
		{"node no cpus", true, []byte{nodeRecordVersion, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, nil, "0 CPUs"},
		{"node no periods", true, node([]byte{0}), bincodec.ErrTruncated, "periods: truncated"},
		{"node periods cap", true, node([]byte{0}, bincodec.AppendUvarint(nil, MaxPeriods+1)), bincodec.ErrTooLarge, "periods: 257 (cap 256)"},
		{"node period order", true, node([]byte{0, 2, 5, 1, 4, 1}), bincodec.ErrMalformed, "period of event 4: not after event 5"},
		{"node period repeated", true, node([]byte{0, 2, 5, 1, 5, 1}), bincodec.ErrMalformed, "period of event 5: not after event 5"},
		{"node period zero", true, node([]byte{0, 1, 5, 0}), bincodec.ErrMalformed, "period of event 5: 0"},
		{"node period truncated", true, node([]byte{0, 1, 5, 0x80}), bincodec.ErrTruncated, "period: truncated"},
		{"ack flags", false, ack([]byte{2}, zeroTimes[:8], []byte{0}), bincodec.ErrMalformed, "flags 0x2: unknown bits"},
		{"ack seqs beyond input", false, ack([]byte{0}, zeroTimes[:8], []byte{3, 1}), bincodec.ErrMalformed, "last seqs: 3 cannot fit in 1 bytes"},
		{"ack seq truncated", false, ack([]byte{0}, zeroTimes[:8], []byte{1, 0x80}), bincodec.ErrTruncated, "last seq: truncated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.node {
				_, err = decodeNode("h", tc.v)
			} else {
				_, err = decodeAck(1, "h", tc.v)
			}
			if !errors.Is(err, ErrCorrupt) || tc.cause != nil && !errors.Is(err, tc.cause) || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want ErrCorrupt and %v containing %q", err, tc.cause, tc.want)
			}
		})
	}
}
