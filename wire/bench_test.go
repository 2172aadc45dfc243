package wire

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchBatch is a daemon-sized batch: n entries over 8 images, 3 events,
// offsets 4 bytes apart as Alpha instructions are.
func benchBatch(n int) *Batch {
	r := rand.New(rand.NewPCG(7, 7))
	b := &Batch{Version: Version, Host: "alpha7-example", Epoch: 12, CPU: 1, Seq: 99, Start: 1e9, End: 2e9,
		Drops: map[string]uint64{DropOverflowFull: 3}}
	for range n {
		k, _ := NewImageKey(KindBuildID, []byte{byte(r.IntN(8)), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19})
		b.Entries = append(b.Entries, Entry{Image: k, Event: uint8(r.IntN(3)), Offset: 4 * uint64(r.IntN(1<<16)), Count: 1 + uint64(r.ExpFloat64()*20)})
	}
	b.Normalize()
	return b
}

// BenchmarkBatch measures the wire encoding beside encoding/gob of the same
// batch, in entries/s.
func BenchmarkBatch(b *testing.B) {
	for _, n := range []int{1000, 50000} {
		bt := benchBatch(n)
		entries := float64(len(bt.Entries))
		data, err := bt.MarshalBinary()
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("encode/n=%d", n), func(b *testing.B) {
			buf := make([]byte, 0, len(data))
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := bt.AppendBinary(buf[:0]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(entries*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
			b.ReportMetric(float64(len(data))/entries, "bytes/entry")
		})
		b.Run(fmt.Sprintf("decode/n=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				var got Batch
				if err := got.UnmarshalBinary(data); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(entries*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
		})
		gbt := toGob(bt)
		var gb bytes.Buffer
		if err := gob.NewEncoder(&gb).Encode(gbt); err != nil {
			b.Fatal(err)
		}
		gobData := gb.Bytes()
		b.Run(fmt.Sprintf("gob-encode/n=%d", n), func(b *testing.B) {
			var buf bytes.Buffer
			for b.Loop() {
				buf.Reset()
				if err := gob.NewEncoder(&buf).Encode(gbt); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(entries*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
			b.ReportMetric(float64(len(gobData))/entries, "bytes/entry")
		})
		b.Run(fmt.Sprintf("gob-decode/n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var got gobBatch
				if err := gob.NewDecoder(bytes.NewReader(gobData)).Decode(&got); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(entries*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
		})
	}
}

// gobBatch mirrors Batch without its methods, which gob would otherwise call
// (Batch is an encoding.BinaryMarshaler and ImageKey a TextMarshaler).
type gobBatch struct {
	Version         uint16
	Host            string
	Epoch           uint64
	CPU             uint16
	Seq, Start, End uint64
	Entries         []gobEntry
	Unknown         []UnknownEntry
	Drops           map[string]uint64
}

type gobEntry struct {
	Image  [34]byte
	Offset uint64
	Event  uint8
	PID    uint32
	Count  uint64
}

func toGob(b *Batch) *gobBatch {
	g := &gobBatch{Version: b.Version, Host: b.Host, Epoch: b.Epoch, CPU: b.CPU, Seq: b.Seq, Start: b.Start, End: b.End, Unknown: b.Unknown, Drops: b.Drops}
	for _, e := range b.Entries {
		g.Entries = append(g.Entries, gobEntry{[34]byte(e.Image), e.Offset, e.Event, e.PID, e.Count})
	}
	return g
}
