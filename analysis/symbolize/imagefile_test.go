package symbolize

import (
	"testing"
	"time"

	"dcpi/wire"
	"dcpi/workloads"
)

// TestReadLinesDamagedDWARF: one damaged byte at the end of tiny's
// .debug_info (found by FuzzOpenImageFile) made debug/dwarf return empty
// entries forever (golang/go#79586), and readLines with it; it must end with
// an error.
func TestReadLinesDamagedDWARF(t *testing.T) {
	tiny, err := workloads.Binary("tiny")
	if err != nil {
		t.Fatal(err)
	}
	const at = 0x2491 // the last byte of .debug_info
	if _, err := readLines(tiny); err != nil || tiny[at] != 0 {
		t.Fatalf("tiny is not the binary this test was written for (byte %#x = %#x, lines: %v)", at, tiny[at], err)
	}
	data := append([]byte(nil), tiny...)
	data[at] = 0xa3
	done := make(chan error, 1)
	go func() {
		_, err := readLines(data)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("damaged DWARF read without an error")
		}
		t.Log(err)
	case <-time.After(20 * time.Second):
		t.Fatal("readLines does not return on damaged DWARF")
	}
}

func TestLookupLine(t *testing.T) {
	rows := []lineRow{
		{addr: 0x100, file: "a.c", line: 1},
		{addr: 0x108, file: "a.c", line: 2},
		{addr: 0x108, file: "a.c", line: 3}, // the last row at an address wins
		{addr: 0x110, end: true},
		{addr: 0x200, file: "b.c", line: 9},
		{addr: 0x204, end: true},
	}
	for _, tc := range []struct {
		addr uint64
		file string
		line int
	}{
		{0xfc, "", 0}, {0x100, "a.c", 1}, {0x104, "a.c", 1}, {0x108, "a.c", 3}, {0x10c, "a.c", 3},
		{0x110, "", 0}, {0x1fc, "", 0}, {0x200, "b.c", 9}, {0x204, "", 0},
	} {
		f, l, ok := lookupLine(rows, tc.addr)
		if f != tc.file || l != tc.line || ok != (tc.line != 0) {
			t.Errorf("%#x: %s:%d %v, want %s:%d", tc.addr, f, l, ok, tc.file, tc.line)
		}
	}
}

// FuzzOpenImageFile feeds OpenImageFile damaged image files: it must return
// an image or an error, never panic or hang, and an image it accepts answers
// Word and Line anywhere. Fuzz it with a short -fuzzminimizetime (say 3s):
// minimizing a 13 KB image under the default minute leaves no time to fuzz.
func FuzzOpenImageFile(f *testing.F) {
	tiny, _ := workloads.Binary("tiny")
	f.Add(tiny)
	f.Add(tiny[:len(tiny)/2])
	f.Add([]byte("\x7fELF"))
	f.Fuzz(func(t *testing.T, data []byte) {
		k, _, err := ImageKeyOf(data, "fuzz")
		if err != nil {
			return
		}
		im, err := OpenImageFile(&wire.ImageRecord{Key: k, Path: "fuzz"}, data, "fuzz")
		if err != nil {
			t.Fatalf("key %v accepted by ImageKeyOf, refused: %v", k, err)
		}
		for _, a := range []uint64{0, im.ELF.TextStart, im.ELF.TextEnd - 4, ^uint64(0) - 2} {
			im.Word(a)
			im.Line(a)
		}
	})
}
