package coordinator

import (
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dcpi/internal/golden"
	"dcpi/internal/hotlist"
	"dcpi/storage"
	"dcpi/wire"
)

// goldenPage is a profile page of rows whose image and host change and
// repeat, in the order a replica sends them.
func goldenPage() *profilePage {
	a := wire.MustParseImageKey("buildid:0102030405060708090a0b0c0d0e0f1011121314")
	b := wire.MustParseImageKey("sha256:" + strings.Repeat("a5", 32))
	return &profilePage{replica: "coord-2", last: true, rows: []ProfileRow{
		{Image: a, Offset: 0x10, Event: 0, Host: "alpha1", Count: 5},
		{Image: a, Offset: 0x18, Event: 0, Host: "alpha1", Count: 1 << 40},
		{Image: a, Offset: 0x18, Event: 3, Host: "alpha2", Count: 1},
		{Image: b, Offset: ^uint64(0), Event: 255, Host: "alpha2", Count: 128},
		{Image: b, Offset: 0, Event: 0, Host: "", Count: 127},
	}}
}

func encodePage(p *profilePage) []byte {
	var e pageEncoder
	for _, r := range p.rows {
		e.add(r)
	}
	return e.finish(p.replica, p.last)
}

// TestEncodingGolden pins the bytes of commands (they live in Raft logs
// across upgrades) and profile pages: every message encodes to the committed
// bytes, and the committed bytes decode to the message. `go test
// ./coordinator -run TestEncodingGolden -update-golden` rewrites the file.
func TestEncodingGolden(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC)
	batch := &wire.Batch{Version: 2, Host: "alpha1", Epoch: 2, CPU: 1, Seq: 10, Start: 100, End: 200, Delivered: 7, Accounted: 7,
		Entries: []wire.Entry{{Image: imgKey(1), Offset: 0x40, Count: 6}},
		Unknown: []wire.UnknownEntry{{PID: 7, PC: 0x1000, Count: 1}}}
	image := &wire.ImageRecord{Version: 2, Key: imgKey(1), Path: "/bin/prog1", Size: 4096, TextStart: 0x1000, TextEnd: 0x2000, Base: 0x1000,
		Symbols: []wire.Symbol{{Name: "main", Addr: 0x1000, Size: 0x100}}}
	var messages []golden.Value
	for i, c := range []Command{
		&Ingest{Deltas: []storage.Delta{{Batch: batch, Last: 12}}, Images: []*wire.ImageRecord{image}},
		&Ingest{},
		&RegisterNode{Host: "alpha1-lab", CPUs: 4, Labels: map[string]string{"rack": "r12", "zone": "é"}, At: at},
		&CutEpoch{At: at},
		&AckEpoch{Host: "alpha1-lab", Epoch: 3, LastSeq: []uint64{1, 0, 127, 128, 1 << 50}, At: at},
		&SealEpoch{Epoch: 1 << 40, At: at},
		&StartEpochs{At: time.Unix(0, 1).UTC()},
		&RegisterNode{Host: "alpha2", CPUs: 2, Periods: map[uint8]uint64{0: 63488, 1: 16384, 4: 16384}, At: at},
		&UploadPaths{Upload: &wire.PathUpload{Host: "alpha1", ID: wire.UploadID{15: 1}, Image: imgKey(1), Source: wire.SourceOracle,
			Profile: wire.PathProfile{ImagePath: "/bin/prog1", PathMetrics: []string{"cycles"},
				Procs:       []wire.PathProc{{Entry: 0x1000, Name: "main", NumPaths: 2, Paths: []wire.PathRun{{ID: 1, Count: 3, Metrics: []uint64{30}}}}},
				TreeMetrics: []string{"calls"}, Tree: []wire.TreeNode{{Metrics: []uint64{0}}, {Proc: 0x1000, Metrics: []uint64{1}}}}}},
		&IngestValues{First: 3, Record: &wire.ValuesRecord{Version: 1, Host: "alpha1", Epoch: 2, Seq: 4, Module: "loadlat",
			Stats: wire.ValueStats{Interrupts: 3, NoContext: 1, Completed: 1, GaveUp: map[string]uint64{"pal": 1}, Steps: 9, Values: 2},
			Lists: []wire.ValueList{{Image: imgKey(1), Offset: 0x40, Kind: 1, List: hotlist.List{N: 2, Entries: []hotlist.Entry{{Value: 3, Count: 2}}}}}}},
		&Ingest{Deltas: []storage.Delta{{Batch: batch, Last: 12}, {Batch: batch, Last: 11,
			Folded: []storage.StreamRun{{CPU: 2, First: 5, Last: 5}, {CPU: wire.AllCPUs, First: 1 << 40, Last: 1<<40 + 1, Delivered: 300, Accounted: 299}}}}},
		&ScheduledCut{Epoch: 1 << 40, At: at},
		&MergeEpochs{First: 3, Last: 1 << 40},
		&ExpireEpochs{Through: 200},
		&PutProcesses{Host: "alpha1", Records: []*wire.ProcessRecord{{Version: wire.ProcessVersion, PID: 4242, Epoch: 3, Start: at.UnixNano(),
			Binary: "/usr/bin/db", Labels: map[string]string{"role": "primary", "shard": "7"}}}},
	} {
		name := fmt.Sprintf("command-%d-%s", i, strings.TrimPrefix(fmt.Sprintf("%T", c), "*coordinator."))
		messages = append(messages, golden.Value{Name: name, Value: c,
			Encode: func() ([]byte, error) { return EncodeCommand(c) },
			Decode: func(b []byte) (any, error) { return DecodeCommand(b) }})
	}
	// Commands an earlier build wrote, which Raft logs still hold: they
	// must decode. Nothing writes them any more.
	for _, old := range []struct {
		name, hex string
		c         Command
	}{
		{"command-v1-RegisterNode", "01020a616c706861312d6c61620418998b01859eb60802047261636b03723132047a6f6e6502c3a9",
			&RegisterNode{Host: "alpha1-lab", CPUs: 4, Labels: map[string]string{"rack": "r12", "zone": "é"}, At: at}},
	} {
		b, err := hex.DecodeString(old.hex)
		if err != nil {
			t.Fatal(err)
		}
		messages = append(messages, golden.Value{Name: old.name, Value: old.c,
			Encode: func() ([]byte, error) { return b, nil },
			Decode: func(b []byte) (any, error) { return DecodeCommand(b) }})
	}
	messages = append(messages, golden.Value{Name: "page", Value: goldenPage(),
		Encode: func() ([]byte, error) { return encodePage(goldenPage()), nil },
		Decode: func(b []byte) (any, error) { return decodePage(b) }})
	golden.Check(t, filepath.Join("testdata", "encoding.golden"), messages)
}
