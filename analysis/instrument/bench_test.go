package instrument

import (
	"bytes"
	"io"
	"testing"

	"dcpi/hwsim"
	"dcpi/workloads"
)

// BenchmarkPixieOverhead reports, per workload at its default size, the
// instrumented program's simulated cycles over the original's on a
// one-CPU 21164 (the PLDI paper's Table 1 gives overhead as such ratios):
//
//	go test ./analysis/instrument -run '^$' -bench PixieOverhead -benchtime 1x
func BenchmarkPixieOverhead(b *testing.B) { benchOverhead(b, ModePixie) }

// BenchmarkPathsOverhead is the same for the paths mode:
//
//	go test ./analysis/instrument -run '^$' -bench PathsOverhead -benchtime 1x
func BenchmarkPathsOverhead(b *testing.B) { benchOverhead(b, ModePaths) }

// BenchmarkCCTOverhead is the same for the CCT mode:
//
//	go test ./analysis/instrument -run '^$' -bench CCTOverhead -benchtime 1x
func BenchmarkCCTOverhead(b *testing.B) { benchOverhead(b, ModeCCT) }

func benchOverhead(b *testing.B, mode string) {
	for _, w := range workloads.All() {
		b.Run(w.Name, func(b *testing.B) {
			orig, err := workloads.Binary(w.Name)
			if err != nil {
				b.Fatal(err)
			}
			res, err := Instrument(orig, w.Name, Options{Mode: mode, DumpPath: "pp.out"})
			if err != nil {
				b.Skipf("not instrumentable: %v", err)
			}
			for range b.N {
				base := cyclesOf(b, w.Name, orig, w.DefaultArgs)
				inst := cyclesOf(b, w.Name, res.ELF, w.DefaultArgs)
				b.ReportMetric(float64(inst)/float64(base), "x-cycles")
				b.ReportMetric(float64(base), "orig-cycles")
			}
		})
	}
}

func cyclesOf(b *testing.B, name string, image []byte, args []string) uint64 {
	path := "/bin/" + name
	c := hwsim.DefaultConfig()
	c.CPUs = 1
	c.Files = map[string][]byte{}
	for _, w := range workloads.All() {
		data, _ := workloads.Binary(w.Name)
		c.Files["/bin/"+w.Name] = data
	}
	c.Files[path] = image
	c.Stdout, c.Stderr = io.Discard, io.Discard
	var dump bytes.Buffer
	c.OpenAppend = func(string) (io.Writer, error) { return &dump, nil }
	m, err := hwsim.New(c)
	if err != nil {
		b.Fatal(err)
	}
	_, err = m.Spawn(path, append([]string{path}, args...), []string{"PATH=/bin"})
	if err != nil {
		b.Fatal(err)
	}
	if m.Run(2_000_000_000_000) {
		b.Fatalf("%s did not finish", name)
	}
	return m.Now() // one CPU: the whole run, forked children included
}
