package main

import (
	"strings"
	"testing"
)

func TestDisasmCommand(t *testing.T) {
	out, _, err := run(t, "disasm", "tiny")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "Disassembly of section .text:") || !strings.Contains(out, "\tcallsys") {
		t.Fatalf("unexpected listing:\n%.400s", out)
	}
	for _, tc := range []struct{ arg, want string }{
		{"main.go", "ELF"},
		{"no-such-file", "no-such-file"},
	} {
		_, _, err := run(t, "disasm", tc.arg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("dcpi disasm %s: err %v, want one mentioning %q", tc.arg, err, tc.want)
		}
	}
}
