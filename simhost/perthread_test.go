package simhost

import (
	"os"
	"testing"

	"dcpi/hwsim"
	"dcpi/node"
	"dcpi/wire"
)

// TestPerThread profiles hwsim's pthreads program, its threads spread
// over four CPUs, with its image kept per thread (node.per_thread) in the
// conservation tests' small node: every sample is published once or
// dropped; the program's samples carry TIDs, each with a thread record
// naming the program's process, the main thread's TID being its PID; they
// sum exactly to the image's total (none lost to "no process"); and
// several threads have samples of their own.
func TestPerThread(t *testing.T) {
	skipUnderRace(t)
	data, err := os.ReadFile("../hwsim/testdata/pthreads")
	if err != nil {
		t.Fatal(err)
	}
	cfg := hwsim.DefaultConfig()
	cfg.CPUs = 4
	cfg.Files = map[string][]byte{"/bin/pthreads": data}
	m, err := hwsim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ncfg := busyDriverConfig()
	ncfg.Node.PerProcess, ncfg.Node.PerThread = []string{"pthreads"}, true
	pub := &node.MemPublisher{}
	n, err := New(m, ncfg, pub)
	if err != nil {
		t.Fatal(err)
	}
	p, err := m.Spawn("/bin/pthreads", []string{"/bin/pthreads", "4", "3000"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Run(0); err != nil {
		t.Fatal(err)
	}
	if p.ExitStatus() != 0 || len(m.Unimplemented()) > 0 {
		t.Fatalf("exit status %#x, unimplemented %v", p.ExitStatus(), m.Unimplemented())
	}
	checkConservation(t, m, n, pub, false)

	threadOf := map[uint32]uint32{} // TID -> PID, from the records
	for _, r := range pub.Processes() {
		if r.Version != wire.ProcessThreadVersion || r.Process == 0 {
			t.Fatalf("a per-thread node's record %+v", *r)
		}
		threadOf[r.PID] = r.Process
	}
	byTID := map[uint32]uint64{}
	var image, sum uint64
	for _, b := range pub.Batches() {
		for _, e := range b.Entries {
			if pub.Images()[e.Image].Path != "/bin/pthreads" {
				if e.PID != 0 {
					t.Fatalf("an entry of %s with PID %d: only pthreads is kept per thread", pub.Images()[e.Image].Path, e.PID)
				}
				continue
			}
			image += e.Count
			if threadOf[e.PID] != uint32(p.PID) {
				t.Fatalf("%d samples of tid %d, a thread of %d by its record, not of pthreads' pid %d", e.Count, e.PID, threadOf[e.PID], p.PID)
			}
			byTID[e.PID] += e.Count
			sum += e.Count
		}
	}
	t.Logf("pid %d: samples by tid %v", p.PID, byTID)
	if sum != image || image == 0 {
		t.Fatalf("threads' samples sum to %d, the image holds %d", sum, image)
	}
	if len(byTID) < 5 || byTID[uint32(p.PID)] == 0 {
		t.Fatalf("samples by tid %v: want the main thread (tid %d) and several workers", byTID, p.PID)
	}
}
