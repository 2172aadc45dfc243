package node

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"dcpi/hwsim/alpha"
	"dcpi/internal/testrand"
)

func randomTrace(rng *rand.Rand, cpus, n int) *Trace {
	t := &Trace{CPUs: cpus}
	pc := make([]uint64, cpus)
	for i := range pc {
		pc[i] = 0x120000000
	}
	for range n {
		c := rng.IntN(cpus)
		switch rng.IntN(20) {
		case 0:
			pc[c] = alpha.KernelBase + rng.Uint64N(1<<20)*4
		case 1:
			pc[c] = rng.Uint64() // anything at all, including wrap-around deltas
		default:
			pc[c] += uint64(rng.IntN(64)-16) * 4
		}
		pid := uint32(rng.IntN(40000))
		if rng.IntN(50) == 0 {
			pid = math.MaxUint32
		}
		t.Samples = append(t.Samples, TraceSample{CPU: c, PID: pid, Incarnation: uint32(rng.IntN(1 << 20)), PC: pc[c], Event: uint8(rng.IntN(int(alpha.NumEvents)))})
	}
	return t
}

func TestTraceRoundTrip(t *testing.T) {
	seed := testrand.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 4))
	for _, n := range []int{0, 1, 1000, 50000} {
		want := randomTrace(rng, 1+rng.IntN(8), n)
		var buf bytes.Buffer
		if err := WriteTrace(&buf, want); err != nil {
			t.Fatal(err)
		}
		got, err := ReadTrace(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("%d samples: %v", n, err)
		}
		if got.CPUs != want.CPUs || len(got.Samples) != len(want.Samples) || (n > 0 && !reflect.DeepEqual(got.Samples, want.Samples)) {
			t.Fatalf("%d samples: read back differs", n)
		}
		if n > 0 {
			t.Logf("%d samples: %.1f bytes a sample", n, float64(buf.Len())/float64(n))
		}
	}
	tw, err := NewTraceWriter(io.Discard, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := tw.Write(TraceSample{CPU: 2}); err == nil {
		t.Error("wrote a sample of cpu 2 of 2")
	}
	if err := tw.Write(TraceSample{Event: uint8(alpha.NumEvents)}); err == nil {
		t.Error("wrote a sample of an unknown event")
	}
	if _, err := NewTraceWriter(io.Discard, 0); err == nil {
		t.Error("made a trace of 0 CPUs")
	}
}

// traceBytes builds a trace by hand: the header for cpus CPUs, then raw
// record bytes.
func traceBytes(version byte, cpus uint64, records ...[]byte) []byte {
	b := append([]byte(traceMagic), version)
	b = binary.AppendUvarint(b, cpus)
	for _, r := range records {
		b = append(b, r...)
	}
	return b
}

func uv(vs ...uint64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.AppendUvarint(b, v)
	}
	return b
}

// TestTraceReaderRejects feeds malformed traces to the reader: each must
// give an error that wraps ErrBadTrace and says what is wrong.
func TestTraceReaderRejects(t *testing.T) {
	sample := func(cpu, pid, inc uint64, ev byte, delta int64) []byte {
		b := uv(cpu+1, pid, inc)
		b = append(b, ev)
		return binary.AppendVarint(b, delta)
	}
	good := sample(0, 7, 9, 0, 0x120000000)
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "header"},
		{"short header", []byte("DCPI"), "unexpected EOF"},
		{"not a trace", []byte("GIF89a\x01\x02\x03"), "not a sample trace"},
		{"future version", traceBytes(2, 1), "version 2"},
		{"no cpu count", traceBytes(1, 1)[:len(traceMagic)+1], "cpus"},
		{"zero cpus", traceBytes(1, 0), "0 CPUs"},
		{"too many cpus", traceBytes(1, MaxTraceCPUs+1), "1025 CPUs"},
		{"no end record", traceBytes(1, 1, good), "sample 1: cpu at byte"},
		{"cut in pid", traceBytes(1, 1, uv(1)), "sample 0: pid"},
		{"cut in incarnation", traceBytes(1, 1, uv(1, 5)), "sample 0: incarnation"},
		{"cut in event", traceBytes(1, 1, uv(1, 5, 6)), "sample 0: event"},
		{"cut in pc", traceBytes(1, 1, append(uv(1, 5, 6), 0)), "sample 0: pc"},
		{"cut in a varint", traceBytes(1, 1, good, []byte{0x81}), "unexpected EOF"},
		{"cpu out of range", traceBytes(1, 2, sample(2, 1, 1, 0, 4)), "cpu 2 of 2"},
		{"pid over 32 bits", traceBytes(1, 1, sample(0, 1<<32, 1, 0, 4)), "more than 32 bits"},
		{"incarnation over 32 bits", traceBytes(1, 1, sample(0, 1, 1<<40, 0, 4)), "more than 32 bits"},
		{"unknown event", traceBytes(1, 1, sample(0, 1, 1, byte(alpha.NumEvents), 4)), "unknown event"},
		{"varint too long", traceBytes(1, 1, bytes.Repeat([]byte{0xff}, 11)), "overflow"},
		{"end count too high", traceBytes(1, 1, good, uv(0, 2)), "end record counts 2 samples, the trace holds 1"},
		{"end count missing", traceBytes(1, 1, good, uv(0)), "end record"},
		{"data after the end", traceBytes(1, 1, good, uv(0, 1), []byte{0}), "data after the end record"},
	} {
		_, err := ReadTrace(bytes.NewReader(c.data))
		if err == nil || !errors.Is(err, ErrBadTrace) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one wrapping ErrBadTrace and saying %q", c.name, err, c.want)
		}
	}
	// And the well-formed neighbour of those cases reads.
	tr, err := ReadTrace(bytes.NewReader(traceBytes(1, 1, good, uv(0, 1))))
	if err != nil || len(tr.Samples) != 1 || tr.Samples[0] != (TraceSample{PID: 7, Incarnation: 9, PC: 0x120000000}) {
		t.Errorf("good trace: %+v, %v", tr, err)
	}
}

// FuzzTraceReader: the reader never panics; what it accepts, written
// again, reads back the same; what it rejects, it rejects with ErrBadTrace.
// Seeds are in testdata/fuzz/FuzzTraceReader.
func FuzzTraceReader(f *testing.F) {
	var buf bytes.Buffer
	if err := WriteTrace(&buf, randomTrace(rand.New(rand.NewPCG(1, 1)), 3, 20)); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add(traceBytes(1, 1, uv(0, 0)))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ReadTrace(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrBadTrace) {
				t.Fatalf("error does not wrap ErrBadTrace: %v", err)
			}
			return
		}
		var out bytes.Buffer
		if err := WriteTrace(&out, tr); err != nil {
			t.Fatalf("accepted trace does not write: %v", err)
		}
		again, err := ReadTrace(&out)
		if err != nil {
			t.Fatalf("rewritten trace does not read: %v", err)
		}
		if again.CPUs != tr.CPUs || len(again.Samples) != len(tr.Samples) || (len(tr.Samples) > 0 && !reflect.DeepEqual(again.Samples, tr.Samples)) {
			t.Fatal("rewritten trace reads differently")
		}
	})
}
