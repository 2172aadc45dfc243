package main

import (
	"strings"
	"testing"
)

func TestSimMicro(t *testing.T) {
	out, _, err := run(t, "sim", "micro", "E-DM1")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "| E-DM1 | one chain of dependent multiplies | 100005 |") || !strings.Contains(out, "| 5.6000 |") {
		t.Errorf("no E-DM1 row with its expectation:\n%s", out)
	}
	if _, _, err := run(t, "sim", "micro", "E-X"); err == nil || !strings.Contains(err.Error(), `"E-X"`) {
		t.Errorf("dcpi sim micro E-X: err %v, want one naming E-X", err)
	}
}
