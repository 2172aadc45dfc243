package wire_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"dcpi/wire"
	"dcpi/wire/wiretest"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite the seed files under testdata/fuzz")

// TestSeedCorpus keeps the committed seed corpora of FuzzBatch and
// FuzzImageRecord: valid messages of several shapes and their truncations.
// `go test ./wire -run TestSeedCorpus -update-corpus` rewrites them; without
// the flag it checks that every committed seed is handled (go test also
// runs them through the fuzz targets).
func TestSeedCorpus(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	rs := rand.New(rand.NewPCG(13, 14))
	var batches, records [][]byte
	for _, b := range []*wire.Batch{
		wire.SampleBatch(),
		{Version: wire.FlatVersion, Host: "h", Seq: 1},
		{Version: wire.FlatVersion, Host: "daemon-example", CPU: wire.AllCPUs, Seq: 3, Drops: map[string]uint64{"daemon.buffer_full": 9, wire.DropOverflowFull: 1}},
		wiretest.RandBatch(r, wiretest.Options{MaxEntries: 3}), wiretest.RandBatch(r, wiretest.Options{MaxEntries: 30}), wiretest.RandBatch(r, wiretest.Options{MaxEntries: 300}),
		// Version 3, with stacks, from a generator of their own so the
		// seeds above stay as they were.
		stackBatch(4), {Version: wire.StackVersion, Host: "h", Seq: 1},
		wiretest.RandBatch(rs, wiretest.Options{MaxEntries: 3, MaxStacks: 4}), wiretest.RandBatch(rs, wiretest.Options{MaxEntries: 10, MaxStacks: 40}),
	} {
		data, err := b.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		batches = append(batches, data, data[:len(data)/2], wire.Reseal(data[:len(data)-1]))
	}
	for _, rec := range []*wire.ImageRecord{wire.SampleRecord(), {Version: wire.Version, Key: wire.KeyA}, wiretest.RandRecord(r, 3), wiretest.RandRecord(r, 40)} {
		data, err := rec.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		records = append(records, data, data[:len(data)/2], wire.Reseal(data[:len(data)-1]))
	}
	for name, seeds := range map[string][][]byte{"FuzzBatch": batches, "FuzzImageRecord": records} {
		dir := filepath.Join("testdata", "fuzz", name)
		if *updateCorpus {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for i, s := range seeds {
				body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		ents, err := os.ReadDir(dir)
		if err != nil || len(ents) < len(seeds) {
			t.Errorf("%s: %d seed files (%v); run with -update-corpus", dir, len(ents), err)
		}
	}
}
