package simrun

import (
	"slices"
	"testing"
)

func TestIPCColumns(t *testing.T) {
	// Six windows of 10 cycles grouped in threes; the last group ends at
	// cycle 55, not 60.
	got := ipcColumns([]uint64{10, 20, 30, 5, 5, 5}, 10, 55, 2)
	if want := []float64{2, 0.6}; !slices.Equal(got, want) {
		t.Errorf("ipcColumns = %v, want %v", got, want)
	}
	if got := ipcColumns(nil, 10, 55, 2); got != nil {
		t.Errorf("no windows: %v", got)
	}
	if got := ipcColumns([]uint64{4}, 10, 0, 16); !slices.Equal(got, []float64{4}) {
		t.Errorf("a window before any time passed: %v", got)
	}
}
