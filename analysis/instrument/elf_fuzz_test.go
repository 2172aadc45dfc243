package instrument

import (
	"encoding/binary"
	"errors"
	"testing"

	"dcpi/hwsim/elfimage"
	"dcpi/workloads"
)

// FuzzInstrument feeds the rewriter's own reading of an ELF file (readELF:
// the header fields it edits, on top of elfimage.Parse, which FuzzParse
// covers) damaged copies of a real static binary: it refuses or rewrites,
// never panics; what it reads points inside the file; and an image it
// rewrites parses again, with the manifest it wrote.
func FuzzInstrument(f *testing.F) {
	tiny, err := workloads.Binary("tiny")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(tiny)
	le := binary.LittleEndian
	for _, c := range []struct{ off, size int }{{32, 8}, {40, 8}, {54, 2}, {56, 2}, {58, 2}, {60, 2}, {62, 2}} {
		for _, v := range []uint64{0, 1, 0xffff, uint64(len(tiny)), 1 << 63} {
			b := append([]byte(nil), tiny...)
			if c.size == 8 {
				le.PutUint64(b[c.off:], v)
			} else {
				le.PutUint16(b[c.off:], uint16(v))
			}
			f.Add(b)
		}
	}
	f.Add(tiny[:64])
	f.Fuzz(func(t *testing.T, data []byte) {
		el, err := readELF(data)
		if err != nil {
			return
		}
		if el.noteIdx < 0 || el.noteIdx >= el.phnum || el.shstrndx >= el.shnum || len(el.shdrs) != el.shnum ||
			el.shstrOff+el.shstrSz > uint64(len(data)) || el.phoff+uint64(el.phnum*phdrSize) > uint64(len(data)) {
			t.Fatalf("readELF: %+v out of a %d-byte file", el, len(data))
		}
		res, err := Instrument(data, "fuzz", Options{Mode: ModePixie, DumpPath: "x.pp.out"})
		if err != nil {
			return
		}
		if _, err := elfimage.Parse(res.ELF, "instrumented"); err != nil {
			var e *elfimage.Error
			if !errors.As(err, &e) {
				t.Fatalf("instrumented image: %v", err)
			}
			t.Fatalf("instrumented image does not parse: %v", err)
		}
		if _, _, err := ReadManifest(res.ELF); err != nil {
			t.Fatalf("instrumented image's manifest: %v", err)
		}
	})
}
