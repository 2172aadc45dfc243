package hwsim_test

import (
	"testing"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
)

// transferLog is a TransferObserver that checks the stream as it comes.
type transferLog struct {
	t        *testing.T
	user     map[alpha.Edge]uint64
	left     map[int]uint64 // by PID: where it left user mode
	fresh    map[int]bool   // by PID: exec'd, the next resume starts the image
	resumes  int
	mismatch int
}

func (l *transferLog) Transfer(tr *hwsim.Transfer) {
	switch tr.Kind {
	case hwsim.TransferUser:
		if tr.PID == 0 {
			l.t.Errorf("user transfer %#x->%#x with no process", tr.From, tr.To)
		}
		l.user[alpha.Edge{From: tr.From, To: tr.To}]++
	case hwsim.TransferKernelEntry:
		l.left[tr.PID] = tr.From
	case hwsim.TransferUserResume:
		l.resumes++
		if l.fresh[tr.PID] {
			delete(l.fresh, tr.PID)
		} else if from, ok := l.left[tr.PID]; !ok || from != tr.To {
			l.mismatch++
		}
	}
}

// TestTransferObserver runs workloads with the observer and ground truth:
// the user transfers it reports are exactly the truth's edges of the
// workload's image, and each process resumes where it left user mode
// except after exec.
func TestTransferObserver(t *testing.T) {
	for _, name := range []string{"tiny", "recurse"} {
		cfg := machineWithWorkloads(t, 1)
		cfg.Timing, cfg.GroundTruth = true, true
		m, err := hwsim.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		l := &transferLog{t: t, user: map[alpha.Edge]uint64{}, left: map[int]uint64{}, fresh: map[int]bool{}}
		m.Subscribe(hwsim.EventFunc(func(e hwsim.Event) {
			if e.Kind == hwsim.EventExec {
				l.fresh[e.PID] = true
			}
		}))
		m.SetTransferObserver(l)
		path := "/bin/" + name
		if _, err := m.Spawn(path, []string{path}, nil); err != nil {
			t.Fatal(err)
		}
		if m.Run(200_000_000_000) {
			t.Fatalf("%s did not finish", name)
		}
		truth := m.GroundTruth()[path]
		if len(truth.Edges) == 0 {
			t.Fatalf("%s: no truth edges", name)
		}
		for e, n := range truth.Edges {
			if l.user[e] != n {
				t.Errorf("%s: edge %#x->%#x: observed %d, truth %d", name, e.From, e.To, l.user[e], n)
			}
		}
		if len(l.user) != len(truth.Edges) {
			t.Errorf("%s: observed %d distinct user edges, truth %d", name, len(l.user), len(truth.Edges))
		}
		if l.resumes == 0 || l.mismatch != 0 {
			t.Errorf("%s: %d resumes, %d not where the process left", name, l.resumes, l.mismatch)
		}
		t.Logf("%s: %d distinct user edges, %d resumes", name, len(l.user), l.resumes)
	}
}
