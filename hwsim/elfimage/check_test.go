package elfimage

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestCheckFile: CheckFile accepts an executable and an object file (which
// Parse refuses) and refuses what Parse refuses in the header, with the
// same words.
func TestCheckFile(t *testing.T) {
	obj, err := os.ReadFile("../alpha/disasm/testdata/edge.o")
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckFile(obj, "edge.o"); err != nil {
		t.Errorf("object file: %v", err)
	}
	if _, err := Parse(obj, "edge.o"); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Parse of an object: %v, want unsupported", err)
	}
	exe, err := os.ReadFile("testdata/free")
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckFile(exe, "a.out"); err != nil {
		t.Errorf("executable: %v", err)
	}
	x86 := append([]byte(nil), exe...)
	x86[18], x86[19] = 62, 0
	for _, tc := range []struct {
		data []byte
		kind error
		want string
	}{
		{nil, ErrNotELF, "elfimage: f: not an ELF file: no ELF magic: file is empty"},
		{[]byte("#!/bin/sh\n"), ErrNotELF, "no ELF magic"},
		{x86, ErrUnsupported, "machine EM_X86_64 (want EM_ALPHA 0x9026)"},
		{obj[:len(obj)/2], ErrMalformed, "extends beyond end of file"},
		{exe[:70], ErrMalformed, "program header table (e_phoff 0x40"},
	} {
		err := CheckFile(tc.data, "f")
		if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.12q: %v, want %v with %q", tc.data, err, tc.kind, tc.want)
		}
	}
}
