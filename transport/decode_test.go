package transport

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"dcpi/wire"
	"dcpi/wire/wiretest"
)

// decodeSeeds are messages of several shapes: good batches, batches forged
// by host and by CPU, an image record, truncations, and subjects that are
// not batch subjects.
func decodeSeeds() (subjects []string, payloads [][]byte) {
	r := rand.New(rand.NewPCG(5, 6))
	keys := []wire.ImageKey{wiretest.RandKey(r), wiretest.RandKey(r)}
	for _, m := range []struct {
		b       *wire.Batch
		subject string
	}{
		{streamBatch(r, "alpha0", 1, 0, 1, 0, keys), "dcpi.batch.alpha0.0"},
		{streamBatch(r, "alpha0", 3, 2, 17, 20, keys), "dcpi.batch.alpha0.2"},
		{streamBatch(r, "alpha0", 1, wire.AllCPUs, 9, 200, keys), "dcpi.batch.alpha0.65535"},
		{streamBatch(r, "alpha1", 1, 0, 1, 5, keys), "dcpi.batch.alpha0.0"}, // forged host
		{streamBatch(r, "alpha0", 1, 3, 1, 5, keys), "dcpi.batch.alpha0.0"}, // forged CPU
	} {
		data, err := m.b.MarshalBinary()
		if err != nil {
			panic(err)
		}
		for _, d := range [][]byte{data, data[:len(data)/2], data[:len(data)-1]} {
			subjects, payloads = append(subjects, m.subject), append(payloads, d)
		}
	}
	img, err := genImage(r, keys[0], 3).MarshalBinary()
	if err != nil {
		panic(err)
	}
	subjects = append(subjects, "dcpi.batch.alpha0.0", "dcpi.batch.", "other.subject",
		"dcpi.batch.alpha0", "dcpi.batch.alpha0.00", "dcpi.batch.alpha0.65536", "dcpi.batch.alpha0.0.1")
	payloads = append(payloads, img, payloads[0], payloads[0], payloads[0], payloads[0], payloads[0], payloads[0])
	return subjects, payloads
}

// TestDecodeTable: every kind of bad message gets an error that wraps the
// right sentinel, and a good one decodes to what was published.
func TestDecodeTable(t *testing.T) {
	r := testRand(t)
	keys := []wire.ImageKey{wiretest.RandKey(r)}
	good := streamBatch(r, "alpha0", 4, 1, 2, 30, keys)
	data, err := good.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	forged, _ := streamBatch(r, "alpha1", 4, 1, 2, 30, keys).MarshalBinary()
	img, _ := genImage(r, keys[0], 2).MarshalBinary()
	badVersion := append([]byte(nil), data...)
	badVersion[5] = 9 // version 9: refused before the checksum is read
	flipped := append([]byte(nil), data...)
	flipped[len(flipped)/2] ^= 0x40
	forgedCPU, _ := streamBatch(r, "alpha0", 4, 2, 2, 30, keys).MarshalBinary()
	for _, tc := range []struct {
		name, subject string
		data          []byte
		want          error
	}{
		{"good", "dcpi.batch.alpha0.1", data, nil},
		{"forged host", "dcpi.batch.alpha0.1", forged, ErrForged},
		{"forged cpu", "dcpi.batch.alpha0.1", forgedCPU, ErrForged},
		{"empty", "dcpi.batch.alpha0.1", nil, wire.ErrMalformed},
		{"text", "dcpi.batch.alpha0.1", []byte("hello"), wire.ErrMalformed},
		{"truncated", "dcpi.batch.alpha0.1", data[:len(data)-3], wire.ErrMalformed},
		{"bit flip", "dcpi.batch.alpha0.1", flipped, wire.ErrMalformed},
		{"version", "dcpi.batch.alpha0.1", badVersion, wire.ErrVersion},
		{"image record", "dcpi.batch.alpha0.1", img, wire.ErrMalformed},
		{"trailing byte", "dcpi.batch.alpha0.1", append(append([]byte(nil), data...), 0), wire.ErrMalformed},
		{"empty host subject", "dcpi.batch..1", data, ErrHost},
		{"foreign subject", "elsewhere.alpha0.1", data, ErrSubject},
		{"old per-host subject", "dcpi.batch.alpha0", data, ErrSubject},
		{"empty cpu", "dcpi.batch.alpha0.", data, ErrSubject},
		{"cpu leading zero", "dcpi.batch.alpha0.01", data, ErrSubject},
		{"cpu sign", "dcpi.batch.alpha0.+1", data, ErrSubject},
		{"cpu hex", "dcpi.batch.alpha0.0x1", data, ErrSubject},
		{"cpu too large", "dcpi.batch.alpha0.65536", data, ErrSubject},
		{"cpu wildcard", "dcpi.batch.alpha0.*", data, ErrSubject},
		{"extra token", "dcpi.batch.alpha0.1.2", data, ErrSubject},
		{"wildcard host", "dcpi.batch.*.1", data, ErrHost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host, cpu, b, err := decodeDelivery(tc.subject, tc.data)
			switch {
			case tc.want == nil:
				if err != nil || host != "alpha0" || cpu != 1 || b == nil || b.Total() != good.Total() {
					t.Fatalf("got %q %d %v %v", host, cpu, b, err)
				}
			case !errors.Is(err, tc.want) || b != nil:
				t.Fatalf("got batch %v, err %v; want %v", b, err, tc.want)
			}
			t.Log(err)
		})
	}
}

// FuzzDecodeDelivery: no subject or payload panics the decoder, and what
// it accepts is a valid batch of the subject's host.
func FuzzDecodeDelivery(f *testing.F) {
	subjects, payloads := decodeSeeds()
	for i := range subjects {
		f.Add(subjects[i], payloads[i])
	}
	f.Fuzz(func(t *testing.T, subject string, data []byte) {
		host, cpu, b, err := decodeDelivery(subject, data)
		if err != nil {
			if b != nil {
				t.Fatalf("batch with error %v", err)
			}
			return
		}
		if err := b.Validate(); err != nil {
			t.Fatalf("accepted an invalid batch: %v", err)
		}
		if want, err := BatchSubject(b.Host, b.CPU); err != nil || want != subject || host != b.Host || cpu != b.CPU {
			t.Fatalf("accepted batch of %q cpu %d on %q (host %q cpu %d, %v)", b.Host, b.CPU, subject, host, cpu, err)
		}
	})
}

var updateCorpus = flag.Bool("update-corpus", false, "rewrite the seed files under testdata/fuzz")

// TestSeedCorpus keeps FuzzDecodeDelivery's committed seed corpus.
// `go test ./transport -run TestSeedCorpus -update-corpus` rewrites it;
// without the flag it checks the files are there (go test runs them
// through the fuzz target).
func TestSeedCorpus(t *testing.T) {
	subjects, payloads := decodeSeeds()
	dir := filepath.Join("testdata", "fuzz", "FuzzDecodeDelivery")
	if *updateCorpus {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range subjects {
			body := fmt.Sprintf("go test fuzz v1\nstring(%q)\n[]byte(%q)\n", subjects[i], payloads[i])
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) < len(subjects) {
		t.Errorf("%s: %d seed files (%v); run with -update-corpus", dir, len(ents), err)
	}
}
