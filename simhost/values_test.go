package simhost

import (
	"strings"
	"testing"

	"dcpi/hwsim"
	"dcpi/node"
	"dcpi/wire"
	"dcpi/workloads"
)

// valuesHost runs names on a two-CPU timed machine with value sampling by
// module and returns the machine, the node and what it published.
func valuesHost(t *testing.T, module string, names ...string) (*hwsim.Machine, *node.Node, *node.MemPublisher) {
	t.Helper()
	cfg := hwsim.DefaultConfig()
	cfg.CPUs = 2
	cfg.Files = map[string][]byte{}
	for _, name := range names {
		data, _ := workloads.Binary(name)
		cfg.Files["/bin/"+name] = data
	}
	m, err := hwsim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ncfg := DefaultConfig()
	ncfg.Node.Values = node.DefaultValuesConfig(module)
	ncfg.Profile.Counters[0].PeriodMin, ncfg.Profile.Counters[0].PeriodMax = 6000, 7000
	ncfg.FlushEvery = 5_000_000
	pub := &node.MemPublisher{}
	h, err := New(m, ncfg, pub)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		w, _ := workloadArgs(name)
		if _, err := m.Spawn("/bin/"+name, append([]string{"/bin/" + name}, w...), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Run(0); err != nil {
		t.Fatal(err)
	}
	return m, h.Node(), pub
}

// TestValueSamplingConservesInterrupts runs value sampling end to end on
// a simulated host and checks its accounting: every counter interrupt the
// machine delivered is in exactly one record's stats, as interpreted to
// the end, given up for a named reason, or without a user context; the
// machine stepped exactly the instructions the records count; and the
// load-latency hot lists cover loads of both programs.
func TestValueSamplingConservesInterrupts(t *testing.T) {
	m, n, pub := valuesHost(t, "loadlat", "ptrchase", "hashdb")
	var delivered, interpreted uint64
	for _, c := range m.CPUStats() {
		for _, v := range c.Interrupts {
			delivered += v
		}
		interpreted += c.Interpreted
	}
	var total wire.ValueStats
	lists := 0
	for _, r := range pub.Values() {
		if !r.Stats.Conserved() {
			t.Fatalf("record %d: stats %+v not conserved", r.Seq, r.Stats)
		}
		total.Add(r.Stats)
		lists += len(r.Lists)
		for _, l := range r.Lists {
			if l.Kind != 1 {
				t.Fatalf("loadlat list of kind %d", l.Kind)
			}
		}
	}
	if total.Interrupts != delivered {
		t.Fatalf("records account for %d interrupts; the machine delivered %d", total.Interrupts, delivered)
	}
	var gaveUp uint64
	for _, c := range total.GaveUp {
		gaveUp += c
	}
	// A run's steps include the one given up, which executed nothing.
	if total.Steps-gaveUp != interpreted {
		t.Fatalf("records count %d steps (%d given up); the machine stepped %d", total.Steps, gaveUp, interpreted)
	}
	if total.Completed == 0 || lists == 0 || total.Values == 0 {
		t.Fatalf("nothing interpreted: %+v, %d lists", total, lists)
	}
	if got := n.ValueTotals(); got.Interrupts != total.Interrupts {
		t.Fatalf("node totals %d interrupts, records %d", got.Interrupts, total.Interrupts)
	}
	t.Logf("%d interrupts: %d no context, %d completed, gave up %v; %d steps, %d values, %d lists in %d records",
		total.Interrupts, total.NoContext, total.Completed, total.GaveUp, total.Steps, total.Values, lists, len(pub.Values()))
}

func TestValueSamplingUnknownModule(t *testing.T) {
	m, err := hwsim.New(hwsim.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	ncfg := DefaultConfig()
	ncfg.Node.Values = node.DefaultValuesConfig("nosuch")
	_, err = New(m, ncfg, &node.MemPublisher{})
	if err == nil || !strings.Contains(err.Error(), `"nosuch"`) || !strings.Contains(err.Error(), "loadlat, regvals, semiinv") {
		t.Fatalf("unknown module: %v", err)
	}
}
