package sched

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sort"
	"testing"

	"dcpi/analysis/codetest"
	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/hwsim/alpha/disasm"
	"dcpi/workloads"
)

// Checking the schedule against ground truth on real code: a workload runs
// on hwsim with the real memory system, and for every instruction that
// hwsim says never stalled dynamically (no I-cache, D-cache, mispredict,
// write-buffer or barrier cycles) the head-of-queue cycles per execution
// should be M. Blocks are found by a simple leader pass over each
// procedure (the real CFG is package analysis/cfg's) and scheduled with no
// predecessor, as DCPI did, so the first instructions of a block can
// differ by what precedes them at run time; the test reports those apart.

// leaderBlocks splits the code of one procedure, words at pc, into basic
// blocks: a block starts at the procedure's entry, at every branch target
// inside it and after every control transfer or PAL call. With each block
// comes its one predecessor, when it has only one and falls through into
// it: the block after a conditional branch or a PAL call (but callsys)
// that no branch targets (nil otherwise).
func leaderBlocks(pc uint64, words []uint32) (blocks []Block, pred []*Block) {
	n := len(words)
	leader := make([]bool, n+1)
	target := make([]bool, n+1)
	falls := make([]bool, n+1) // the instruction before falls through into this one
	leader[0], leader[n], target[0] = true, true, true
	for i, w := range words {
		d := alpha.Decode(w, alpha.EV5)
		cl := alpha.ClassOf(d.Op)
		// callsys enters the kernel, which restarts the pipeline on return.
		falls[i+1] = !cl.Jump && d.Op != alpha.OpBR && !(d.Op == alpha.OpCallPal && d.Imm == 0x83)
		if cl.Branch || cl.Jump || d.Op == alpha.OpBR || d.Op == alpha.OpCallPal {
			leader[i+1] = true
		}
		if cl.Branch || d.Op == alpha.OpBR {
			if t := int64(i) + 1 + int64(d.Imm)/4; t >= 0 && t < int64(n) {
				leader[t], target[t] = true, true
			}
		}
	}
	for i := 0; i < n; {
		j := i + 1
		for !leader[j] {
			j++
		}
		var p *Block
		if len(blocks) > 0 && !target[i] && falls[i] {
			p = &blocks[len(blocks)-1]
		}
		blocks = append(blocks, Block{PC: pc + 4*uint64(i), Words: words[i:j]})
		pred = append(pred, p)
		i = j
	}
	// The predecessors point into blocks: copy them now it has stopped growing.
	for k, p := range pred {
		if p != nil {
			pred[k] = &blocks[k-1]
		}
	}
	return blocks, pred
}

// imageBlocks returns the basic blocks of every function symbol of an ELF
// image, each with its fall-through predecessor as leaderBlocks finds it.
func imageBlocks(t *testing.T, image []byte) (blocks []Block, preds []*Block) {
	f, err := elf.NewFile(bytes.NewReader(image))
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	text := f.Section(".text")
	if text == nil {
		t.Fatal("no .text")
	}
	data, err := io.ReadAll(text.Open())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]bool{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Size < 4 || seen[s.Value] ||
			s.Value < text.Addr || s.Value+s.Size > text.Addr+uint64(len(data)) {
			continue
		}
		seen[s.Value] = true
		off := s.Value - text.Addr
		words := make([]uint32, s.Size/4)
		for i := range words {
			words[i] = binary.LittleEndian.Uint32(data[off+4*uint64(i):])
		}
		b, p := leaderBlocks(s.Value, words)
		blocks, preds = append(blocks, b...), append(preds, p...)
	}
	return blocks, preds
}

// truthMatch is how one workload's schedule compares with its truth.
type truthMatch struct {
	pcs, match         int // PCs without dynamic stalls, and those with head = M·executions
	inner, innerMatch  int // the same, not counting each block's first issue group
	under              int // inner mismatches with fewer head cycles than M·executions
	predMatch          int // PCs matching M scheduled after the fall-through predecessor, where it is the only one
	weighted, weightOK uint64
	mismatches         []string
}

func runTruth(t *testing.T, name string, args ...string) truthMatch {
	t.Helper()
	run := codetest.RunWorkload(t, name, args, hwsim.ProfileConfig{}, nil)
	image, truth := run.Image, run.Truth

	var r truthMatch
	blocks, preds := imageBlocks(t, image)
	for k, b := range blocks {
		s, err := Of(b, Options{})
		if err != nil {
			t.Fatal(err)
		}
		// With the fall-through predecessor where it is the only one: the
		// state the block really starts in, but for interrupts.
		sp := s
		if preds[k] != nil {
			if sp, err = Of(b, Options{Pred: []Block{*preds[k]}}); err != nil {
				t.Fatal(err)
			}
		}
		first := true // in the block's first issue group
		for i, in := range s.Insns {
			if i > 0 && in.M > 0 {
				first = false
			}
			tr := truth.PCs[in.PC]
			if tr == nil || tr.Executed == 0 {
				continue
			}
			dynamic := uint64(0)
			for c := alpha.StallCause(0); c < alpha.NumStallCauses; c++ {
				if c.Dynamic() {
					dynamic += tr.Stall[c]
				}
			}
			if dynamic > 0 {
				continue
			}
			ok := tr.HeadCycles == uint64(in.M)*tr.Executed
			if tr.HeadCycles == uint64(sp.Insns[i].M)*tr.Executed {
				r.predMatch++
			}
			r.pcs++
			r.weighted += tr.Executed
			if ok {
				r.match++
				r.weightOK += tr.Executed
			}
			if !first {
				r.inner++
				if ok {
					r.innerMatch++
				} else {
					if tr.HeadCycles < uint64(in.M)*tr.Executed {
						r.under++
					}
					if len(r.mismatches) < 10 {
						r.mismatches = append(r.mismatches, mismatch(in, tr, truth.PCs[in.PC-4]))
					}
				}
			}
		}
	}
	return r
}

func mismatch(in Insn, tr, prev *alpha.PCTruth) string {
	msg := fmt.Sprintf("%#x %-24s M %d %+v; hwsim %d executions, %d head cycles, slot/ra/rb/imul/fdiv %v",
		in.PC, disasm.Insn(in.Word, in.PC, nil), in.M, in.Stalls, tr.Executed, tr.HeadCycles, tr.Stall[:alpha.StallICache])
	if prev != nil {
		msg += fmt.Sprintf("; the instruction before: %d executions, %d head cycles, stalls %v", prev.Executed, prev.HeadCycles, prev.Stall)
	}
	return msg
}

func (r truthMatch) String() string {
	pct := func(a, b uint64) float64 {
		if b == 0 {
			return 0
		}
		return 100 * float64(a) / float64(b)
	}
	return fmt.Sprintf("PCs without dynamic stalls: %d, head = M·executions for %.1f%% (%.1f%% of their executions); "+
		"past the block's first issue group: %d, %.1f%% (mismatches: %d fewer cycles, %d more); "+
		"after the only, fall-through, predecessor: %.1f%%",
		r.pcs, pct(uint64(r.match), uint64(r.pcs)), pct(r.weightOK, r.weighted), r.inner, pct(uint64(r.innerMatch), uint64(r.inner)),
		r.under, r.inner-r.innerMatch-r.under, pct(uint64(r.predMatch), uint64(r.pcs)))
}

// TestTruthSmallWorkloads runs the two small workloads (glibc start-up and
// exit, and a freestanding program) and pins a floor on the share of
// instructions, among those without dynamic stalls and past their block's
// first issue group, whose head-of-queue cycles are M per execution.
func TestTruthSmallWorkloads(t *testing.T) {
	for _, name := range []string{"tiny", "hello"} {
		r := runTruth(t, name)
		t.Logf("%s: %s", name, r)
		for _, m := range r.mismatches {
			t.Logf("    %s", m)
		}
		if r.inner == 0 || float64(r.innerMatch) < 0.97*float64(r.inner) {
			t.Errorf("%s: only %d of %d inner PCs match: %v", name, r.innerMatch, r.inner, r.mismatches)
		}
		if float64(r.predMatch) < 0.95*float64(r.pcs) {
			t.Errorf("%s: only %d of %d PCs match after their fall-through predecessor", name, r.predMatch, r.pcs)
		}
	}
}

// TestTruthAllWorkloads is the same over every committed workload with
// its default arguments (minutes): DCPI_SCHED_TRUTH=1 go test -run
// TruthAll -v ./analysis/sched.
func TestTruthAllWorkloads(t *testing.T) {
	if os.Getenv("DCPI_SCHED_TRUTH") == "" {
		t.Skip("set DCPI_SCHED_TRUTH=1 to run every workload")
	}
	ws := workloads.All()
	sort.Slice(ws, func(i, j int) bool { return ws[i].Name < ws[j].Name })
	for _, w := range ws {
		if w.Name == "ccdriver" {
			continue // its children exec /bin/ccdriver: the same image, many processes
		}
		r := runTruth(t, w.Name, w.DefaultArgs...)
		t.Logf("%-8s %s", w.Name, r)
		for _, m := range r.mismatches {
			t.Logf("    %s", m)
		}
	}
}
