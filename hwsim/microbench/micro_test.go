package microbench

import (
	"errors"
	"math"
	"os"
	"testing"

	"dcpi/hwsim/ev6"
)

// cRPinned is C-R's CPI when the table in docs/timing-21264.md was made:
// C-R has no closed form, so it is pinned as a regression guard only.
const cRPinned = 1.1782

// TestMicrobenchmarksAgainstAnalytic pins every microbenchmark's CPI to
// its analytic expectation under the published parameters (within 5%
// unless its Note says why not), the C-Sn loops' cost per jump mispredict
// to the HRM's penalty plus the jump's wait for its target, and C-R to its
// measured CPI. With -v it prints docs/timing-21264.md's table.
func TestMicrobenchmarksAgainstAnalytic(t *testing.T) {
	byName := map[string]Result{}
	var rs []Result
	for _, b := range Suite() {
		r, err := Run(b.Name, ev6.Params{})
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
		byName[b.Name] = r
		tol := b.Tolerance
		if tol == 0 {
			tol = 0.05
		}
		switch {
		case b.Expect > 0:
			if math.Abs(r.Error()) > tol {
				t.Errorf("%s: CPI %.4f, expected %.4f within %.0f%% (%s)", b.Name, r.CPI(), b.Expect, 100*tol, b.Why)
			}
		case b.Name == "C-R":
			if math.Abs(r.CPI()/cRPinned-1) > 0.05 {
				t.Errorf("C-R: CPI %.4f, pinned at %.4f", r.CPI(), cRPinned)
			}
		}
	}
	if c := SwitchCost(byName["C-S1"], byName["C-S3"]); math.Abs(c/SwitchCostExpect-1) > 0.05 {
		t.Errorf("C-Sn: %.2f cycles per jump mispredict, expected %d", c, SwitchCostExpect)
	} else {
		t.Logf("C-Sn: %.2f cycles per jump mispredict (expected %d)", c, SwitchCostExpect)
	}
	if testing.Verbose() {
		if err := WriteTable(os.Stdout, rs); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMicrobenchmarksSeeTheModel checks the suite can fail: a memory
// latency twice the model's moves M-M far outside its expectation.
func TestMicrobenchmarksSeeTheModel(t *testing.T) {
	p := ev6.DefaultParams()
	p.MemoryCycles *= 2
	r, err := Run("M-M", p)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(r.Error()) < 0.5 {
		t.Errorf("M-M with memory at %d cycles: CPI %.2f, error %.1f%%; the expectation should not hold", p.MemoryCycles, r.CPI(), 100*r.Error())
	}
}

func TestUnknownMicrobenchmark(t *testing.T) {
	if _, err := Run("nosuch", ev6.Params{}); !errors.Is(err, ErrUnknown) {
		t.Errorf("Run(nosuch) error = %v, want ErrUnknown", err)
	}
}
