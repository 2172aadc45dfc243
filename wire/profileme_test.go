package wire_test

import (
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"

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

// meGolden is meBatch's encoding: a change to the format must be a new
// version, not new bytes for this one.
const meGoldenHex = "44435042000406616c706861300100070a140000000000000000010202140a0b0c0d0e0f101112131415161718191a1b1c1da0020083c280e1410303025a500378010202140a0b0c0d0e0f101112131415161718191a1b1c1da402009780808002020101010204011770726f66696c656d652e68617264776172655f66756c6c05c2f923d4"

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
	if h := hex.EncodeToString(data); h != meGoldenHex {
		t.Errorf("encoding changed:\n got %s\nwant %s", h, meGoldenHex)
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
	i := strings.Index(string(body[wire.HeaderLen:]), "\x00\x00\x00\x01\x02")
	if i < 0 {
		t.Fatalf("section not found in %x", data)
	}
	bad := append([]byte(nil), body...)
	bad[wire.HeaderLen+i+3] = 2
	bad = wire.Reseal(append(bad, make([]byte, wire.TrailerLen)...))
	var b wire.Batch
	err = b.UnmarshalBinary(bad)
	if !errors.Is(err, wire.ErrVersion) || !strings.Contains(err.Error(), "ProfileMe section version 2") {
		t.Fatalf("section version 2: %v", err)
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
