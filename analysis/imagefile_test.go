package analysis

import (
	"testing"
	"time"

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
