package wire_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"dcpi/wire"
)

func sampleProcess() *wire.ProcessRecord {
	return &wire.ProcessRecord{Version: wire.ProcessVersion, PID: 4242, Epoch: 3, Start: 1_700_000_000_000_000_000,
		Binary: "/usr/bin/db", Labels: map[string]string{"role": "primary", "shard": "7"}}
}

// sampleThread is a per-thread node's record of a thread of
// sampleProcess's process.
func sampleThread() *wire.ProcessRecord {
	r := sampleProcess()
	r.Version, r.PID, r.Process = wire.ProcessThreadVersion, 4250, 4242
	return r
}

func TestProcessRecordRoundTrip(t *testing.T) {
	for _, r := range []*wire.ProcessRecord{
		sampleProcess(),
		{Version: 1, PID: 1, Binary: "x"},
		{Version: 1, PID: 1<<32 - 1, Epoch: 1 << 60, Start: -5, Binary: "/opt/a b/ü", Labels: map[string]string{"empty": ""}},
		sampleThread(),
		{Version: wire.ProcessThreadVersion, PID: 9, Binary: "/bin/t", Process: 9},
	} {
		data, err := r.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var got wire.ProcessRecord
		if err := got.UnmarshalBinary(data); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(&got, r) {
			t.Errorf("round trip: got %+v, want %+v", got, *r)
		}
	}
}

func TestProcessRecordRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(r *wire.ProcessRecord)
		want error
	}{
		{"version 0", func(r *wire.ProcessRecord) { r.Version = 0 }, wire.ErrVersion},
		{"version 3", func(r *wire.ProcessRecord) { r.Version = 3 }, wire.ErrVersion},
		{"thread of no process", func(r *wire.ProcessRecord) { r.Version = wire.ProcessThreadVersion }, wire.ErrInvalid},
		{"process in version 1", func(r *wire.ProcessRecord) { r.Process = 7 }, wire.ErrInvalid},
		{"pid 0", func(r *wire.ProcessRecord) { r.PID = 0 }, wire.ErrInvalid},
		{"empty binary", func(r *wire.ProcessRecord) { r.Binary = "" }, wire.ErrInvalid},
		{"long binary", func(r *wire.ProcessRecord) { r.Binary = strings.Repeat("a", wire.MaxPathLen+1) }, wire.ErrTooLarge},
		{"control in binary", func(r *wire.ProcessRecord) { r.Binary = "/bin/a\nb" }, wire.ErrInvalid},
		{"reserved label", func(r *wire.ProcessRecord) { r.Labels = map[string]string{"binary": "x"} }, wire.ErrLabel},
		{"bad label name", func(r *wire.ProcessRecord) { r.Labels = map[string]string{"1x": "x"} }, wire.ErrLabel},
	} {
		r := sampleProcess()
		c.edit(r)
		if _, err := r.MarshalBinary(); !errors.Is(err, c.want) {
			t.Errorf("%s: Marshal = %v, want %v", c.name, err, c.want)
		}
	}
}

func TestProcessRecordLabelOrder(t *testing.T) {
	// Labels out of key order are a second encoding of one record.
	data, _ := sampleProcess().MarshalBinary()
	i, j := bytes.Index(data, []byte("role")), bytes.Index(data, []byte("shard"))
	swapped := append([]byte{}, data[:i-1]...)
	swapped = append(swapped, data[j-1:len(data)-4]...)
	swapped = append(swapped, data[i-1:j-1]...)
	swapped = wire.Reseal(append(swapped, 0, 0, 0, 0))
	var r wire.ProcessRecord
	if err := r.UnmarshalBinary(swapped); !errors.Is(err, wire.ErrInvalid) {
		t.Fatalf("labels out of order: %v, want ErrInvalid", err)
	}
}

func processSeeds() [][]byte {
	var out [][]byte
	for _, r := range []*wire.ProcessRecord{sampleProcess(), {Version: 1, PID: 7, Binary: "/bin/sh"}, sampleThread()} {
		data, err := r.MarshalBinary()
		if err != nil {
			panic(err)
		}
		out = append(out, data, data[:len(data)/2], wire.Reseal(data[:len(data)-1]))
	}
	return out
}

func FuzzProcessRecord(f *testing.F) {
	for _, s := range processSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkProcess(t, data)
		if len(data) >= wire.HeaderLen+wire.TrailerLen {
			checkProcess(t, wire.Reseal(data))
		}
	})
}

func checkProcess(t *testing.T, data []byte) {
	var r wire.ProcessRecord
	if err := r.UnmarshalBinary(data); err != nil {
		if r.Version != 0 || r.Binary != "" || r.Labels != nil || r.Process != 0 {
			t.Fatalf("record not zeroed after error %v", err)
		}
		return
	}
	again, err := r.MarshalBinary()
	if err != nil {
		t.Fatalf("decoded record does not encode: %v", err)
	}
	if !bytes.Equal(again, data) {
		t.Fatalf("re-encoding differs:\n in %x\nout %x", data, again)
	}
}

// TestProcessSeedCorpus keeps testdata/fuzz/FuzzProcessRecord
// (-update-corpus rewrites it).
func TestProcessSeedCorpus(t *testing.T) {
	seeds := processSeeds()
	dir := filepath.Join("testdata", "fuzz", "FuzzProcessRecord")
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
		return
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) < len(seeds) {
		t.Errorf("%s: %d seed files (%v); run with -update-corpus", dir, len(ents), err)
	}
}
