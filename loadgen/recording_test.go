package loadgen

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"reflect"
	"slices"
	"testing"

	"dcpi/wire"
)

// testRecording is a small recording of host alpha0: two CPUs, three
// batches each, an image record before the first, and the daemon's drops.
func testRecording(t testing.TB) *Recording {
	t.Helper()
	sum := sha256.Sum256([]byte("image"))
	key, err := wire.NewImageKey(wire.KindSHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	r := &Recording{Header: Header{Host: "alpha0", CPUs: 2, ClockHz: 1000, FlushEvery: 100, Cycles: 300,
		Events: []string{"cycles"}, Programs: []string{"/bin/x"}}}
	r.Items = append(r.Items, Item{Kind: KindImage, At: 0, Image: &wire.ImageRecord{Version: wire.Version, Key: key, Path: "/bin/x",
		Size: 4096, TextStart: 0x120000000, TextEnd: 0x120001000, Base: 0x120000000}})
	var delivered [2]uint64
	for seq := uint64(1); seq <= 3; seq++ {
		for cpu := uint16(0); cpu < 2; cpu++ {
			b := &wire.Batch{Version: wire.Version, Host: "alpha0", Epoch: 1, CPU: cpu, Seq: seq, Start: (seq - 1) * 100, End: seq * 100,
				Entries: []wire.Entry{{Image: key, Offset: 0x10 * seq, Count: 5 + seq}}}
			if seq == 2 {
				b.Drops = map[string]uint64{wire.DropBufferFull: 2}
			}
			delivered[cpu] += Samples(b)
			b.Delivered, b.Accounted = delivered[cpu], delivered[cpu]
			r.Items = append(r.Items, Item{Kind: KindBatch, At: b.End, Batch: b})
			r.Header.Generated += Samples(b)
		}
	}
	return r
}

func encode(t testing.TB, r *Recording) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := r.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRecordingRoundTrip(t *testing.T) {
	r := testRecording(t)
	got, err := Decode(encode(t, r))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Header, r.Header) || len(got.Items) != len(r.Items) {
		t.Fatalf("decoded %+v (%d items), want %+v (%d)", got.Header, len(got.Items), r.Header, len(r.Items))
	}
	for i := range r.Items {
		a, b := got.Items[i], r.Items[i]
		if a.Kind != b.Kind || a.At != b.At || !reflect.DeepEqual(a.Batch, b.Batch) || !reflect.DeepEqual(a.Image, b.Image) {
			t.Errorf("item %d: %+v, want %+v", i, a, b)
		}
	}
}

// TestRecordingRefused: another version, a flipped byte anywhere, a
// truncation and an inconsistent recording are each refused with their
// own error, never decoded.
func TestRecordingRefused(t *testing.T) {
	good := encode(t, testRecording(t))
	v2 := bytes.Clone(good)
	binary.BigEndian.PutUint16(v2[len(Magic):], Version+1)
	if _, err := Decode(v2); !errors.Is(err, ErrVersion) {
		t.Errorf("version %d: %v, want ErrVersion", Version+1, err)
	}
	for i := len(Magic) + 2; i < len(good); i++ {
		bad := bytes.Clone(good)
		bad[i] ^= 0x40
		if _, err := Decode(bad); !errors.Is(err, ErrFormat) {
			t.Fatalf("byte %d flipped: %v, want ErrFormat", i, err)
		}
	}
	for _, n := range []int{0, 3, len(Magic) + 2, len(good) / 2, len(good) - 1} {
		if _, err := Decode(good[:n]); !errors.Is(err, ErrFormat) {
			t.Errorf("truncated to %d bytes: %v, want ErrFormat", n, err)
		}
	}
	r := testRecording(t)
	r.Header.Generated++
	var buf bytes.Buffer
	if err := r.Encode(&buf); !errors.Is(err, ErrFormat) {
		t.Errorf("header Generated off by one: encoded (%v)", err)
	}
	r = testRecording(t)
	r.Items[3].Batch.Seq = 5 // a gap in CPU 0's stream
	if err := r.Check(); !errors.Is(err, ErrFormat) {
		t.Errorf("a seq gap: %v, want ErrFormat", err)
	}
}

// TestAgentRewrites: an agent's batches carry its host, its epoch, and
// per CPU sequence numbers contiguous from 1 across loops, with time and
// accounting shifted by a loop each.
func TestAgentRewrites(t *testing.T) {
	r := testRecording(t)
	a, err := NewAgent(r, "lg0007", 4)
	if err != nil {
		t.Fatal(err)
	}
	next := map[uint16]uint64{}
	var last uint64
	var delivered = map[uint16]uint64{}
	for loop := uint64(0); loop < 3; loop++ {
		for i := range a.Len() {
			if at := a.At(loop, i); at < last {
				t.Fatalf("loop %d item %d at %d, before %d", loop, i, at, last)
			} else {
				last = at
			}
			var b wire.Batch
			if !a.Batch(loop, i, &b) {
				if a.Image(i) == nil {
					t.Fatalf("item %d neither batch nor image", i)
				}
				continue
			}
			if b.Host != "lg0007" || b.Epoch != 4 {
				t.Errorf("batch of host %q epoch %d", b.Host, b.Epoch)
			}
			if b.Seq != next[b.CPU]+1 {
				t.Errorf("loop %d CPU %d: seq %d after %d", loop, b.CPU, b.Seq, next[b.CPU])
			}
			next[b.CPU] = b.Seq
			if b.End != loop*300+r.Items[i].Batch.End {
				t.Errorf("loop %d: End %d", loop, b.End)
			}
			delivered[b.CPU] += Samples(&b)
			if b.Delivered != delivered[b.CPU] {
				t.Errorf("loop %d CPU %d seq %d: Delivered %d, want %d", loop, b.CPU, b.Seq, b.Delivered, delivered[b.CPU])
			}
			if err := b.Validate(); err != nil {
				t.Error(err)
			}
		}
	}
	if r.Items[1].Batch.Host != "alpha0" {
		t.Error("the agent changed the recording")
	}
	if _, err := NewAgent(r, "bad.host", 1); err == nil {
		t.Error("a host name with a dot accepted")
	}
}

// TestEntryRate: the test recording's batches each hold one entry, the
// same on both CPUs, a different offset per seq: three keys in 0.3 s
// however they are windowed. When every batch has the same key, windows
// of one drain count it once each (three), one window once.
func TestEntryRate(t *testing.T) {
	r := testRecording(t) // 300 cycles at 1000 Hz: 0.3 s, a batch a CPU every 100
	for _, c := range []struct {
		window uint64
		want   float64
	}{{50, 3 / 0.3}, {100, 3 / 0.3}, {150, 3 / 0.3}, {300, 3 / 0.3}, {0, 0}} {
		if got := r.EntryRate(c.window); got != c.want {
			t.Errorf("EntryRate(%d) = %g, want %g", c.window, got, c.want)
		}
	}
	for i := range r.Items {
		if b := r.Items[i].Batch; b != nil {
			b.Entries[0].Offset = 0x10
		}
	}
	for _, c := range []struct {
		window uint64
		want   float64
	}{{100, 3 / 0.3}, {150, 2 / 0.3}, {300, 1 / 0.3}} {
		if got := r.EntryRate(c.window); got != c.want {
			t.Errorf("one key: EntryRate(%d) = %g, want %g", c.window, got, c.want)
		}
	}
}

// TestAgentFollowsEpochs: after a cut the agent's batches carry the new
// epoch, and the cut names, per stream, the last Seq it stamped with the
// old one (0 for a stream with none), then each skipped epoch with none.
func TestAgentFollowsEpochs(t *testing.T) {
	r := testRecording(t)
	a, err := NewAgent(r, "lg0001", 4)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.Cut(4); ok {
		t.Error("a cut to the agent's own epoch")
	}
	var b wire.Batch
	// Items: the image, then seq 1 of CPUs 0 and 1, seq 2 of CPU 0.
	for i := 0; i < 4; i++ {
		a.Batch(0, i, &b)
	}
	c, ok := a.Cut(6)
	if !ok || c.Epoch != 4 || c.Next != 6 || !slices.Equal(c.LastSeq, []uint64{2, 1, 0}) {
		t.Fatalf("cut from 4 to 6: %+v %v, want epoch 4, next 6, last seqs [2 1 0]", c, ok)
	}
	acks := c.Acks()
	if len(acks) != 2 || acks[0].Epoch != 4 || !slices.Equal(acks[0].LastSeq, []uint64{2, 1, 0}) ||
		acks[1].Epoch != 5 || !slices.Equal(acks[1].LastSeq, []uint64{0, 0, 0}) {
		t.Errorf("acks %+v, want epoch 4 [2 1 0] and the skipped epoch 5 with none", acks)
	}
	if a.Batch(0, 4, &b); b.Epoch != 6 || b.Seq != 2 || b.CPU != 1 {
		t.Errorf("after the cut: batch of epoch %d, CPU %d seq %d; want epoch 6, CPU 1 seq 2", b.Epoch, b.CPU, b.Seq)
	}
	if _, ok := a.Cut(5); ok || a.Epoch() != 6 {
		t.Errorf("a cut back to 5 taken: epoch %d", a.Epoch())
	}
	c, _ = a.Cut(7)
	if !slices.Equal(c.LastSeq, []uint64{0, 2, 0}) {
		t.Errorf("second cut's last seqs %v, want [0 2 0]: only what was stamped with 6", c.LastSeq)
	}
}

// TestAgentCutsWhilePublishing: cuts from another goroutine (the
// heartbeat's) while batches are stamped: every batch is in exactly one
// epoch's acknowledgement, and a stream's epochs never go back.
func TestAgentCutsWhilePublishing(t *testing.T) {
	r := testRecording(t)
	a, err := NewAgent(r, "lg0002", 1)
	if err != nil {
		t.Fatal(err)
	}
	const loops = 2000
	epochOf := map[[2]uint64]uint64{} // (CPU, seq) → epoch stamped
	done := make(chan struct{})
	go func() {
		defer close(done)
		var b wire.Batch
		for loop := uint64(0); loop < loops; loop++ {
			for i := range a.Len() {
				if a.Batch(loop, i, &b) {
					epochOf[[2]uint64{uint64(b.CPU), b.Seq}] = b.Epoch
				}
			}
		}
	}()
	last := map[uint64][]uint64{} // epoch → its ack's LastSeq
	for next := uint64(2); ; next++ {
		c, ok := a.Cut(next)
		if !ok || c.Epoch != next-1 {
			t.Fatalf("cut to %d: %+v %v", next, c, ok)
		}
		last[c.Epoch] = c.LastSeq
		select {
		case <-done:
			c, _ := a.Cut(next + 1)
			last[c.Epoch] = c.LastSeq
			// Each stream's batches: epochs ascending, and the last
			// of each epoch is what its ack named.
			for cpu := uint64(0); cpu < 2; cpu++ {
				prev := uint64(0)
				for seq := uint64(1); seq <= loops*3; seq++ {
					e := epochOf[[2]uint64{cpu, seq}]
					if e < prev {
						t.Fatalf("CPU %d seq %d in epoch %d after %d", cpu, seq, e, prev)
					}
					if nxt := epochOf[[2]uint64{cpu, seq + 1}]; nxt != e && last[e][cpu] != seq {
						t.Fatalf("CPU %d: epoch %d ends at seq %d, its ack says %d", cpu, e, seq, last[e][cpu])
					}
					prev = e
				}
			}
			return
		default:
		}
	}
}
