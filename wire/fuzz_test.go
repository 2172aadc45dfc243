package wire_test

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"testing"

	"dcpi/wire"
	"dcpi/wire/wiretest"
)

// The fuzz targets decode arbitrary bytes twice: as given, and with the
// checksum recomputed, so that mutations reach the parser behind the CRC.
// Whatever decodes must re-encode to the same bytes (one encoding per
// message) and must validate.

func FuzzBatch(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, b := range []*wire.Batch{wire.SampleBatch(), {Version: wire.Version, Host: "h", Seq: 1}, wiretest.RandBatch(r, wiretest.Options{MaxEntries: 20}), wiretest.RandBatch(r, wiretest.Options{MaxEntries: 5}),
		stackBatch(3), wiretest.RandBatch(r, wiretest.Options{MaxEntries: 5, MaxStacks: 10}), meBatch()} {
		data, err := b.MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkBatch(t, data)
		if len(data) >= wire.HeaderLen+wire.TrailerLen {
			checkBatch(t, wire.Reseal(data))
		}
	})
}

func checkBatch(t *testing.T, data []byte) {
	var b wire.Batch
	if err := b.UnmarshalBinary(data); err != nil {
		if b.Version != 0 || b.Host != "" || b.Entries != nil {
			t.Fatalf("batch not zeroed after error %v", err)
		}
		return
	}
	if err := b.Validate(); err != nil {
		t.Fatalf("decoded batch does not validate: %v", err)
	}
	again, err := b.MarshalBinary()
	if err != nil {
		t.Fatalf("decoded batch does not encode: %v", err)
	}
	if !bytes.Equal(again, data) {
		// A version-1 ProfileMe section is read and written back as
		// the current version: the one re-encoding allowed to differ,
		// and then only to the same batch, at a fixed point.
		var b2 wire.Batch
		err := b2.UnmarshalBinary(again)
		third, _ := b2.MarshalBinary()
		if err != nil || b.Version < wire.MeVersion || !reflect.DeepEqual(&b, &b2) || !bytes.Equal(third, again) {
			t.Fatalf("re-encoding differs:\n in %x\nout %x", data, again)
		}
	}
	_ = b.Total()
}

func FuzzImageRecord(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, rec := range []*wire.ImageRecord{wire.SampleRecord(), {Version: wire.Version, Key: wire.KeyA}, wiretest.RandRecord(r, 10)} {
		data, err := rec.MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkRecord(t, data)
		if len(data) >= wire.HeaderLen+wire.TrailerLen {
			checkRecord(t, wire.Reseal(data))
		}
	})
}

func checkRecord(t *testing.T, data []byte) {
	var rec wire.ImageRecord
	if err := rec.UnmarshalBinary(data); err != nil {
		if rec.Version != 0 || rec.Symbols != nil {
			t.Fatalf("record not zeroed after error %v", err)
		}
		return
	}
	again, err := rec.MarshalBinary()
	if err != nil {
		t.Fatalf("decoded record does not encode: %v", err)
	}
	if !bytes.Equal(again, data) {
		t.Fatalf("re-encoding differs:\n in %x\nout %x", data, again)
	}
}
