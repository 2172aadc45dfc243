package wire

import (
	"dcpi/internal/golden"
	"path/filepath"
	"strings"
	"testing"
)

// goldenMessages are messages of every shape, written out here rather than
// taken from the other tests' samples so that the golden file changes only
// when the format does.
func goldenMessages() []struct {
	name string
	msg  interface {
		MarshalBinary() ([]byte, error)
	}
} {
	sha := MustParseImageKey("sha256:" + strings.Repeat("a5", 32))
	bid := MustParseImageKey("buildid:0102030405060708090a0b0c0d0e0f1011121314")
	full := &Batch{
		Version: 2, Host: "alpha7-lab", Epoch: 300, CPU: 3, Seq: 1 << 20, Start: 5_000_000_000, End: 6_000_000_000,
		Delivered: 1 << 40, Accounted: 1<<40 - 9,
		Entries: []Entry{
			{Image: sha, Event: 0, Offset: 0x10, Count: 5},
			{Image: sha, Event: 0, Offset: 0x10, PID: 42, Count: 1},
			{Image: sha, Event: 0, Offset: 0x2000, Count: 300},
			{Image: sha, Event: 4, Offset: 0x8, Count: 1 << 33},
			{Image: bid, Event: 1, Offset: ^uint64(0), PID: ^uint32(0), Count: 1},
		},
		Unknown: []UnknownEntry{{PID: 7, PC: 0x120000000, Count: 3}, {PID: 7, PC: 0x120000000, Event: 2, Count: 128}},
		Drops:   map[string]uint64{"driver.overflow_full": 4, "daemon.buffer_full": 1 << 50},
	}
	v1 := &Batch{Version: 1, Host: "h", Epoch: 1, Seq: 1, Start: 0, End: 127,
		Entries: []Entry{{Image: bid, Offset: 0x40, Count: 2}}}
	daemon := &Batch{Version: 2, Host: "daemon-example", CPU: AllCPUs, Seq: 3, Delivered: 9, Accounted: 9,
		Drops: map[string]uint64{"crash.lost": 9}}
	v3 := &Batch{Version: 3, Host: "alpha7-lab", Epoch: 300, CPU: 1, Seq: 9, Start: 100, End: 200, Delivered: 12, Accounted: 12,
		Entries: []Entry{{Image: sha, Offset: 0x40, Count: 7}, {Image: bid, Offset: 0x10, Count: 5}},
		Stacks: []StackEntry{
			{Frames: []Frame{{Image: sha, Offset: 0x40}, {Image: bid, Offset: 0x24}, {Image: bid, Offset: 0x88}}, Count: 4},
			{Frames: []Frame{{Image: bid, Offset: 0x10}, {Image: bid, Offset: 0x88}}, Count: 5},
			{PID: 42, Event: 2, Truncated: true, Frames: []Frame{{Offset: 0x120000abc}, {Image: sha, Offset: 0x40}}, Count: 3},
		},
		StackDrops: map[string]uint64{"driver.stack_table_full": 2}}
	rec := &ImageRecord{Version: 2, Key: bid, Path: "/usr/lib/libc.so.6", Size: 812345,
		TextStart: 0x120000000, TextEnd: 0x120080000, Base: 0x11fff0000,
		Symbols: []Symbol{{Name: "_start", Addr: 0x120000000, Size: 0x40}, {Name: "main", Addr: 0x120000040, Size: 0x100}}}
	recV1 := &ImageRecord{Version: 1, Key: sha, Path: "", Size: 0, TextStart: 16, TextEnd: 16}
	return []struct {
		name string
		msg  interface {
			MarshalBinary() ([]byte, error)
		}
	}{
		{"batch-v3", v3}, {"batch-v2", full}, {"batch-v1", v1}, {"batch-daemon", daemon}, {"image-v2", rec}, {"image-v1", recV1},
	}
}

// TestEncodingGolden pins the bytes of both formats: every message encodes
// to the committed bytes, and the committed bytes decode to the message.
// `go test ./wire -run TestEncodingGolden -update-golden` rewrites the file,
// which only a deliberate format change (a new version) should need.
func TestEncodingGolden(t *testing.T) {
	var values []golden.Value
	for _, m := range goldenMessages() {
		v := golden.Value{Name: m.name, Value: m.msg, Encode: m.msg.MarshalBinary}
		switch m.msg.(type) {
		case *Batch:
			v.Decode = func(data []byte) (any, error) { var b Batch; return &b, b.UnmarshalBinary(data) }
		case *ImageRecord:
			v.Decode = func(data []byte) (any, error) { var r ImageRecord; return &r, r.UnmarshalBinary(data) }
		}
		values = append(values, v)
	}
	golden.Check(t, filepath.Join("testdata", "encoding.golden"), values)
}
