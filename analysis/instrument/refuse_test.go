package instrument

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"dcpi/workloads"
)

func TestRefusesBadInput(t *testing.T) {
	tiny, err := workloads.Binary("tiny")
	if err != nil {
		t.Fatal(err)
	}
	hello, err := workloads.Binary("hello")
	if err != nil {
		t.Fatal(err)
	}
	instrumented, err := Instrument(hello, "hello", Options{Mode: ModePixie, DumpPath: "x.pp.out"})
	if err != nil {
		t.Fatal(err)
	}
	writableText := append([]byte(nil), hello...)
	phoff := binary.LittleEndian.Uint64(writableText[32:])
	binary.LittleEndian.PutUint32(writableText[phoff+4:], 7) // first PT_LOAD: R W X
	noNote := append([]byte(nil), hello...)
	for i := range int(binary.LittleEndian.Uint16(noNote[56:])) {
		ph := noNote[phoff+uint64(56*i):]
		if binary.LittleEndian.Uint32(ph) == ptNote {
			binary.LittleEndian.PutUint32(ph, 0x6474e551) // PT_GNU_STACK
		}
	}
	for _, tc := range []struct {
		name string
		data []byte
		opt  Options
		want string
	}{
		{"empty", nil, Options{Mode: ModePixie, DumpPath: "x"}, "not an ELF"},
		{"text", []byte("#!/bin/sh\necho hi\n"), Options{Mode: ModePixie, DumpPath: "x"}, "not an ELF"},
		{"truncated", hello[:200], Options{Mode: ModePixie, DumpPath: "x"}, "cannot instrument"},
		{"writable text", writableText, Options{Mode: ModePixie, DumpPath: "x"}, "writable and executable"},
		{"no PT_NOTE", noNote, Options{Mode: ModePixie, DumpPath: "x"}, "no PT_NOTE"},
		{"already instrumented", instrumented.ELF, Options{Mode: ModePixie, DumpPath: "x"}, "already instrumented"},
		{"unknown mode", hello, Options{Mode: "calltree", DumpPath: "x"}, "unknown mode"},
		{"no dump path", hello, Options{Mode: ModePixie}, "dump path"},
		{"strict", hello, Options{Mode: ModePixie, DumpPath: "x", Strict: true}, "cannot resolve"},
		{"strict paths", hello, Options{Mode: ModePaths, DumpPath: "x", Strict: true}, "cannot resolve"},
		{"strict cct", hello, Options{Mode: ModeCCT, DumpPath: "x", Strict: true}, "cannot resolve"},
		{"cct chunk not pages", hello, Options{Mode: ModeCCT, DumpPath: "x", CCTChunkBytes: 5000}, "chunk size"},
		{"tiny has no exit_group", tiny, Options{Mode: ModePixie, DumpPath: "x"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Instrument(tc.data, tc.name, tc.opt)
			if tc.want == "" {
				return // either outcome is acceptable; it must not panic
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if strings.Contains(tc.want, "cannot") && !errors.Is(err, ErrRefused) {
				t.Errorf("%v is not ErrRefused", err)
			}
		})
	}
}

func TestDumpReaderRefusesMismatch(t *testing.T) {
	hello, _ := workloads.Binary("hello")
	a, err := Instrument(hello, "hello", Options{Mode: ModePixie, DumpPath: "a.pp.out"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Instrument(hello, "hello", Options{Mode: ModePixie, DumpPath: "b.pp.out"})
	if err != nil {
		t.Fatal(err)
	}
	_, hashA, err := ReadManifest(a.ELF)
	if err != nil {
		t.Fatal(err)
	}
	rec := append(header(modePixie, hashA, a.Manifest.Counters), make([]byte, 8*a.Manifest.Counters)...)
	if _, err := ReadCounts(a.ELF, rec); err != nil {
		t.Fatalf("own dump: %v", err)
	}
	if _, err := ReadCounts(b.ELF, rec); !errors.Is(err, ErrMismatch) {
		t.Fatalf("another image's dump: got %v, want ErrMismatch", err)
	}
	if _, err := ReadCounts(a.ELF, rec[:len(rec)-8]); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("truncated dump: got %v", err)
	}
}

// FuzzParseDump feeds the dump reader arbitrary bytes: it must return
// records or an error, never panic, and never more counters than asked.
func FuzzParseDump(f *testing.F) {
	var hash [16]byte
	copy(hash[:], "0123456789abcdef")
	rec := append(header(modePixie, hash, 3), make([]byte, 24)...)
	f.Add(rec)
	f.Add(append(append([]byte(nil), rec...), rec...))
	f.Add(rec[:70])
	f.Add([]byte(dumpMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := ParseDump(data, hash, 3)
		if err != nil {
			return
		}
		for _, r := range recs {
			if len(r.Counters) != 3 {
				t.Fatalf("record with %d counters", len(r.Counters))
			}
		}
		if len(recs)*(headerSize+24) != len(data) {
			t.Fatalf("%d records from %d bytes", len(recs), len(data))
		}
	})
}

// FuzzManifest feeds the manifest decoder arbitrary section contents.
func FuzzManifest(f *testing.F) {
	m := &Manifest{Version: ManifestVersion, Mode: ModePixie, Counters: 2,
		Procs: []ProcInfo{{Name: "p", Start: 0x100, End: 0x120, Blocks: []BlockInfo{{0x100, 0x110, 0}},
			Jumps: []JumpInfo{{PC: 0x10c, Lo: 0x110, Counter: 1, Slots: 1, Targets: []uint64{0x110}}}}}}
	sec, _, err := m.encode()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sec)
	f.Fuzz(func(t *testing.T, data []byte) {
		m, _, err := decodeManifest(data)
		if err != nil {
			return
		}
		// A decoded manifest with nonsense counters must give an error, not a panic.
		countsOf(m, make([]uint64, 2), 1)
	})
}
