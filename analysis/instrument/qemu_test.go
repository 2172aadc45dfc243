package instrument

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"os/exec"
	"testing"
)

// TestPixieOnQemu runs instrumented workloads on qemu-alpha (skipped
// without it): output must be the original's there too, and the counts
// must equal those of the same run on hwsim, an independent check of
// hwsim's execution (and so of its ground truth). Environment and
// arguments are the same on both, so glibc's start-up runs alike.
func TestPixieOnQemu(t *testing.T) {
	qemu, err := exec.LookPath("qemu-alpha")
	if err != nil {
		t.Skip("qemu-alpha not installed")
	}
	if testing.Short() {
		t.Skip("runs workloads")
	}
	for _, tc := range []struct {
		name string
		args []string
	}{{"hello", nil}, {"sort", []string{"2000"}}, {"interp", []string{"1"}}} {
		t.Run(tc.name, func(t *testing.T) {
			orig, res := instrumentWorkload(t, tc.name, ModePixie)
			dump := qemuBoth(t, qemu, t.TempDir(), tc.name, tc.args, orig, res.ELF)
			onQemu, err := ReadCounts(res.ELF, dump)
			if err != nil {
				t.Fatal(err)
			}
			_, _, _, _, files := simRun(t, tc.name, res.ELF, tc.args)
			onSim, err := ReadCounts(res.ELF, files["pp.out"].Bytes())
			if err != nil {
				t.Fatal(err)
			}
			// glibc's start-up reads the auxiliary vector, the environment
			// and /proc/self/exe, which the two emulators present a little
			// differently; the program's own code (the procedures its DWARF
			// describes: glibc here has none) must agree exactly.
			own := ownCode(t, orig)
			var diff, same int
			for pc, n := range onSim.Blocks {
				if !own(pc) {
					continue
				}
				if onQemu.Blocks[pc] != n {
					if diff++; diff <= 10 {
						t.Errorf("block %#x: %d on hwsim, %d on qemu-alpha", pc, n, onQemu.Blocks[pc])
					}
				} else if n > 0 {
					same++
				}
			}
			for e, n := range onSim.Edges {
				if own(e.From) && onQemu.Edges[e] != n {
					if diff++; diff <= 10 {
						t.Errorf("edge %#x->%#x: %d on hwsim, %d on qemu-alpha", e.From, e.To, n, onQemu.Edges[e])
					}
				}
			}
			if same < 5 {
				t.Errorf("only %d executed blocks agree", same)
			}
			t.Logf("%d executed blocks of the program's own code agree", same)
		})
	}
}

// ownCode reports whether an address lies in a procedure the image's DWARF
// describes.
func ownCode(t *testing.T, image []byte) func(uint64) bool {
	f, err := elf.NewFile(bytes.NewReader(image))
	if err != nil {
		t.Fatal(err)
	}
	d, err := f.DWARF()
	if err != nil {
		t.Fatal(err)
	}
	var ranges [][2]uint64
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if e == nil {
			break
		}
		if e.Tag != dwarf.TagSubprogram {
			continue
		}
		rs, err := d.Ranges(e)
		if err != nil {
			continue
		}
		ranges = append(ranges, rs...)
	}
	if len(ranges) == 0 {
		t.Fatal("no DWARF subprograms")
	}
	return func(pc uint64) bool {
		for _, rg := range ranges {
			if pc >= rg[0] && pc < rg[1] {
				return true
			}
		}
		return false
	}
}
