package hwsim_test

import (
	"fmt"
	"testing"
	"dcpi/hwsim/alpha"
	"dcpi/workloads"
)

func TestZZScan(t *testing.T) {
	for _, name := range []string{"matmul", "hashdb", "ptrchase", "sort", "stream"} {
		args, _ := workloadDefaults(name)
		m := truthRun(t, name, false, args...)
		v := m.ValueTruth()["/bin/"+name]
		image, _ := workloads.Binary(name)
		words := textWords(t, image)
		for pc, pv := range v.PCs {
			var n uint64
			for _, c := range pv.Levels { n += c }
			if n < 5000 { continue }
			var big int
			for _, c := range pv.Levels { if float64(c) >= 0.2*float64(n) { big++ } }
			if big >= 2 {
				fmt.Printf("%s %#x %-24s n=%d levels=%v\n", name, pc, fmt.Sprint(alpha.Decode(words[pc], alpha.EV5).Op), n, pv.Levels)
			}
		}
	}
}
