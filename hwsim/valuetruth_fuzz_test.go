package hwsim_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
)

// FuzzReadValueTruth: no input makes the value truth reader (--truth of
// dcpi values, simhost.ReadValueTruthFile) panic, and what it accepts
// writes out, reads back and writes out again the same: the histograms of
// every instruction that has a count survive the trip.
func FuzzReadValueTruth(f *testing.F) {
	g := alpha.NewValueTruth()
	g.PCs[0x120000010] = &alpha.PCValues{
		Result:   alpha.Histogram{Values: []alpha.ValueCount{{Value: 0x10, Count: 3}, {Value: 1 << 63, Count: 1}}, Other: 2},
		OperandA: alpha.Histogram{Values: []alpha.ValueCount{{Value: 0, Count: 5}}},
		Levels:   [alpha.NumLevels]uint64{3, 1, 0, 1},
		Latency:  alpha.Histogram{Values: []alpha.ValueCount{{Value: 2, Count: 3}, {Value: 80, Count: 2}}},
	}
	g.PCs[0x120000014] = &alpha.PCValues{OperandB: alpha.Histogram{Other: 9}}
	var seed bytes.Buffer
	if err := hwsim.EncodeValueTruth(&seed, map[string]*alpha.ValueTruth{"/bin/x": g, "a\tb": g}); err != nil {
		f.Fatal(err)
	}
	f.Add(seed.String())
	f.Add(hwsim.ValueTruthVersion + "\n[values]\nimage\tpc\tkind\ttotal\tother\tvalues\n/x\t0x10\tresult\t5\t0\t0x1:4\n")
	f.Add(hwsim.ValueTruthVersion + "\n[values]\nimage\tpc\tkind\ttotal\tother\tvalues\n/x\t0x10\tra\t4\t0\t0x1:4\n/x\t0x10\tra\t8\t0\t0x1:4\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, in string) {
		got, err := hwsim.ReadValueTruth(strings.NewReader(in))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := hwsim.EncodeValueTruth(&out, got); err != nil {
			t.Fatal(err)
		}
		back, err := hwsim.ReadValueTruth(bytes.NewReader(out.Bytes()))
		if err != nil {
			t.Fatalf("reading what was written: %v\n%s", err, out.String())
		}
		for path, g := range got {
			for pc, v := range g.PCs {
				var b *alpha.PCValues
				if back[path] != nil {
					b = back[path].PCs[pc]
				}
				for _, h := range []struct {
					name string
					have func(*alpha.PCValues) *alpha.Histogram
				}{
					{"result", func(v *alpha.PCValues) *alpha.Histogram { return &v.Result }},
					{"ra", func(v *alpha.PCValues) *alpha.Histogram { return &v.OperandA }},
					{"rb", func(v *alpha.PCValues) *alpha.Histogram { return &v.OperandB }},
					{"latency", func(v *alpha.PCValues) *alpha.Histogram { return &v.Latency }},
				} {
					w := h.have(v)
					if w.Total() == 0 && len(w.Values) == 0 {
						continue
					}
					if b == nil || !reflect.DeepEqual(*h.have(b), *w) {
						t.Fatalf("%q %#x %s: read %+v, read back %+v\n%s", path, pc, h.name, *w, b, out.String())
					}
				}
			}
		}
		var again bytes.Buffer
		if err := hwsim.EncodeValueTruth(&again, back); err != nil || again.String() != out.String() {
			t.Fatalf("written twice, the file differs: %v", err)
		}
	})
}
