package wire_test

import (
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"

	"dcpi/internal/hotlist"
	"dcpi/wire"
)

// meBatch is a version-4 batch with two ProfileMe entries, unknown
// samples and a drop counter.
func meBatch() *wire.Batch {
	key := wire.MustParseImageKey("buildid:0a0b0c0d0e0f101112131415161718191a1b1c1d")
	var c1, c2 wire.MeCounts
	c1[wire.MeSamples], c1[wire.MeRetired], c1[wire.MeDMiss], c1[wire.MeHeadCycles] = 3, 3, 2, 90
	c1[wire.MeStall0+7], c1[wire.MeLoads], c1[wire.MeLoadLatency], c1[wire.MeHist0+6] = 80, 3, 120, 2
	c1[wire.MeHist0] = 1
	c2[wire.MeSamples], c2[wire.MeRetired], c2[wire.MeAbortIntr], c2[wire.MeTaken], c2[wire.MeHist0+1] = 2, 1, 1, 1, 2
	return &wire.Batch{Version: wire.MeVersion, Host: "alpha0", Epoch: 1, CPU: 0, Seq: 7, Start: 10, End: 20,
		Me:        []wire.MeEntry{{Image: key, Offset: 0x120, Counts: c1}, {Image: key, Offset: 0x124, Counts: c2}},
		MeUnknown: 4, MeDrops: map[string]uint64{"profileme.hardware_full": 5}}
}

// meGoldenV1Hex is meBatch's encoding in section version 1, which this
// build still reads: a change to the format must be a new version, not
// new bytes for an old one.
// meGoldenV2Hex is its encoding in section version 2, which this build
// writes.
const meGoldenV2Hex = "44435042000406616c706861300100070a140000000000000000020202140a0b0c0d0e0f101112131415161718191a1b1c1da0020083c280e1410303025a500378010202140a0b0c0d0e0f101112131415161718191a1b1c1da402009780808002020101010204011770726f66696c656d652e68617264776172655f66756c6c050000007b15dcd4"

const meGoldenV1Hex = "44435042000406616c706861300100070a140000000000000000010202140a0b0c0d0e0f101112131415161718191a1b1c1da0020083c280e1410303025a500378010202140a0b0c0d0e0f101112131415161718191a1b1c1da402009780808002020101010204011770726f66696c656d652e68617264776172655f66756c6c05c2f923d4"

func TestProfileMeBatchRoundTrip(t *testing.T) {
	b := meBatch()
	data, err := b.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var got wire.Batch
	if err := got.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&got, b) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, *b)
	}
	if got.MeTotal() != 3+2+4 {
		t.Fatalf("MeTotal %d", got.MeTotal())
	}
	if got.Total() != 0 {
		t.Fatalf("counter total %d: ProfileMe samples are not counter samples", got.Total())
	}
	if h := hex.EncodeToString(data); h != meGoldenV2Hex {
		t.Errorf("encoding changed:\n got %s\nwant %s", h, meGoldenV2Hex)
	}
	v1, err := hex.DecodeString(meGoldenV1Hex)
	if err != nil {
		t.Fatal(err)
	}
	var old wire.Batch
	if err := old.UnmarshalBinary(v1); err != nil {
		t.Fatalf("a version 1 section no longer decodes: %v", err)
	}
	if !reflect.DeepEqual(&old, b) {
		t.Fatalf("version 1 section:\n got %+v\nwant %+v", old, *b)
	}
}

// TestProfileMeSectionVersion: a section of another version is refused
// with ErrVersion and a message naming it; a version-3 batch may carry no
// ProfileMe samples.
func TestProfileMeSectionVersion(t *testing.T) {
	data, err := meBatch().MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	body := data[:len(data)-wire.TrailerLen]
	// The section starts after the (empty) stack section: find the
	// section version byte right after the 3 empty stack counts.
	i := strings.Index(string(body[wire.HeaderLen:]), "\x00\x00\x00\x02\x02")
	if i < 0 {
		t.Fatalf("section not found in %x", data)
	}
	bad := append([]byte(nil), body...)
	bad[wire.HeaderLen+i+3] = 3
	bad = wire.Reseal(append(bad, make([]byte, wire.TrailerLen)...))
	var b wire.Batch
	err = b.UnmarshalBinary(bad)
	if !errors.Is(err, wire.ErrVersion) || !strings.Contains(err.Error(), "ProfileMe section version 3") {
		t.Fatalf("section version 3: %v", err)
	}
	old := meBatch()
	old.Version = wire.StackVersion
	if _, err := old.MarshalBinary(); !errors.Is(err, wire.ErrInvalid) {
		t.Fatalf("version 3 with ProfileMe samples: %v", err)
	}
	inconsistent := meBatch()
	inconsistent.Me[0].Counts[wire.MeRetired] = 1
	if _, err := inconsistent.MarshalBinary(); !errors.Is(err, wire.ErrInvalid) {
		t.Fatalf("samples != retired + aborted: %v", err)
	}
}

// meBatchV2 adds what section version 2 carries: a squashed abort, stage
// latencies, pair statistics, history counts and an address hot list.
func meBatchV2() *wire.Batch {
	b := meBatch()
	c := &b.Me[0].Counts
	c[wire.MeSamples], c[wire.MeAbortSquash] = 4, 1
	c[wire.MeStage0], c[wire.MeStage0+4] = 12, 7
	c[wire.MeFirst], c[wire.MeSecond], c[wire.MePartnerRetired], c[wire.MeOverlap] = 2, 1, 3, 2
	c[wire.MeOverlapCycles], c[wire.MeUseful], c[wire.MeInProgress] = 40, 1, 66
	key := b.Me[0].Image
	b.MeHist = []wire.MeHistEntry{{Image: key, Offset: 0x120, History: 0x5, Count: 3}, {Image: key, Offset: 0x120, History: 0xffff, Count: 1}}
	b.MeHistDropped = 2
	b.MeAddrs = []wire.MeAddrList{{Image: key, Offset: 0x120, List: hotlist.List{N: 3, Entries: []hotlist.Entry{{Value: 0x1000, Count: 2}, {Value: 0x2000, Count: 1}}}}}
	return b
}

func TestProfileMeV2RoundTrip(t *testing.T) {
	b := meBatchV2()
	data, err := b.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var got wire.Batch
	if err := got.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&got, b) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, *b)
	}
	// Normalize sums equal history keys and merges equal address lists.
	n := meBatchV2()
	n.MeHist = append(n.MeHist, n.MeHist[0])
	n.MeAddrs = append(n.MeAddrs, n.MeAddrs[0])
	n.Normalize()
	if len(n.MeHist) != 2 || n.MeHist[0].Count != 6 || len(n.MeAddrs) != 1 || n.MeAddrs[0].List.N != 6 {
		t.Fatalf("normalized: %+v %+v", n.MeHist, n.MeAddrs)
	}
}

// TestProfileMeV2Invalid: counts that break an entry's pair rules, and
// history or address tables out of order or empty, are refused with a
// clear error.
func TestProfileMeV2Invalid(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(b *wire.Batch)
		want string
	}{
		{"squash not counted", func(b *wire.Batch) { b.Me[0].Counts[wire.MeAbortSquash] = 0 }, "retired or aborted"},
		{"more pair roles than samples", func(b *wire.Batch) { b.Me[0].Counts[wire.MeSecond] = 3 }, "first and"},
		{"useful beyond overlap", func(b *wire.Batch) { b.Me[0].Counts[wire.MeUseful] = 3 }, "useful overlaps"},
		{"overlap cycles alone", func(b *wire.Batch) {
			c := &b.Me[0].Counts
			c[wire.MeOverlap], c[wire.MeUseful] = 0, 0
		}, "overlap cycles without"},
		{"in progress unpaired", func(b *wire.Batch) { b.Me[1].Counts[wire.MeInProgress] = 5 }, "in-progress cycles"},
		{"history order", func(b *wire.Batch) { b.MeHist[0], b.MeHist[1] = b.MeHist[1], b.MeHist[0] }, "history entry 1: not after"},
		{"history zero", func(b *wire.Batch) { b.MeHist[1].Count = 0 }, "count 0"},
		{"empty address list", func(b *wire.Batch) { b.MeAddrs[0].List = hotlist.List{} }, "no samples"},
		{"address counts beyond samples", func(b *wire.Batch) { b.MeAddrs[0].List.N = 1 }, "exceed"},
	} {
		b := meBatchV2()
		tc.edit(b)
		if err := b.Validate(); !errors.Is(err, wire.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrInvalid mentioning %q", tc.name, err, tc.want)
		}
	}
}
