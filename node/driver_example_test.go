package node_test

import (
	"fmt"

	"dcpi/node"
)

// The driver of one CPU and the daemon's two flush cycles. On a simulated
// host, Sample runs in the machine's counter interrupt and each "IPI" below
// is a function sent with hwsim.Machine.SendIPI that calls the driver and
// then signals a channel the daemon waits on (see driver_flush.go); here,
// with nothing running concurrently, the daemon just calls them.
func ExampleDriver() {
	cfg := node.DefaultDriverConfig()
	cfg.TableEntries, cfg.BufferEntries = 64, 8 // tiny, to fill a buffer
	d, err := node.NewDriver(cfg)
	if err != nil {
		panic(err)
	}
	ipi := func(fn func()) { fn() }

	var got []node.Entry
	for i := range 200 {
		pc := 0x120000000 + uint64(i%100)*4
		if _, full := d.Sample(42, pc, 0); full {
			// The buffer-full cycle: publish, copy, give back.
			ipi(func() { d.HandOff(false) })
			for ok := true; ok; {
				got, ok = d.TakeFull(got)
			}
			ipi(func() { d.Release() })
		}
	}
	// The periodic full drain.
	ipi(d.BeginFlush)
	got = d.DrainTable(got)
	ipi(func() { d.EndFlush(); d.HandOff(true) })
	for ok := true; ok; {
		got, ok = d.TakeFull(got)
	}
	ipi(func() { d.Release() })

	var samples uint32
	for _, e := range got {
		samples += e.Count
	}
	st := d.Stats()
	fmt.Printf("%d samples: %d hits, %d misses (%d evictions); the daemon got %d samples in %d entries; %d dropped\n",
		st.Samples, st.Hits, st.Misses, st.Evictions, samples, len(got), st.Dropped)
	// Output:
	// 200 samples: 46 hits, 154 misses (90 evictions); the daemon got 200 samples in 154 entries; 0 dropped
}
