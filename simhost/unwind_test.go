package simhost_test

import (
	"slices"
	"testing"

	"dcpi/analysis/codetest"
	"dcpi/hwsim"
	"dcpi/hwsim/elfimage"
	"dcpi/internal/longtest"
	"dcpi/internal/racedetect"
	"dcpi/node/unwind"
	"dcpi/simhost"
	"dcpi/wire"
	"dcpi/workloads"
)

// walker walks every user-mode sample's chain twice: with the image's
// call frame information, and with the prologue heuristic alone.
type walker struct {
	cfi, heur *unwind.Space
	chains    [][]uint64 // the CFI walks, leaf first
	truncated []bool
	heurSame  int // heuristic walks identical to the CFI walk
	heurFull  int // heuristic walks that reached the outermost frame
	// frames the heuristic produced, and those that differ from the
	// table walk's frame at the same depth (invented, not just missing)
	heurFrames, heurWrong int
	user                  int
	reads                 int
}

func (w *walker) CounterInterrupt(s hwsim.Sample) uint64 {
	if s.Mem == nil || s.Kernel {
		return 0
	}
	w.user++
	regs := unwind.Regs{PC: s.PC, SP: s.SP, FP: s.FP, RA: s.RA, T9: s.T9}
	var a, b [wire.MaxStackFrames]uint64
	ra := w.cfi.Walk(regs, s.Mem, a[:])
	rb := w.heur.Walk(regs, s.Mem, b[:])
	w.reads += ra.Reads
	w.chains = append(w.chains, slices.Clone(a[:ra.N]))
	w.truncated = append(w.truncated, ra.Truncated)
	// The heuristic cannot unwind _start (no frame allocation, its RA
	// column is r15): agreeing frames are agreement.
	if ra.N == rb.N && a == b {
		w.heurSame++
	}
	for k := range rb.N {
		w.heurFrames++
		if k >= ra.N || a[k] != b[k] {
			w.heurWrong++
		}
	}
	if !rb.Truncated {
		w.heurFull++
	}
	return 0
}

func spaces(t *testing.T, name string) (*elfimage.Image, *unwind.Space, *unwind.Space) {
	t.Helper()
	data, err := workloads.Binary(name)
	if err != nil {
		t.Fatal(err)
	}
	im, err := elfimage.Parse(data, "/bin/"+name)
	if err != nil {
		t.Fatal(err)
	}
	base, hi := ^uint64(0), uint64(0)
	for _, s := range im.Segments {
		base, hi = min(base, s.Vaddr&^(8192-1)), max(hi, s.Vaddr+s.Memsz)
	}
	tab, err := simhost.UnwindTableOf(im, base)
	if err != nil {
		t.Fatal(err)
	}
	if tab.Rows() == 0 {
		t.Fatalf("%s: no unwind rows", name)
	}
	var exec []unwind.Range
	for _, s := range im.Segments {
		if s.Flags&elfimage.PermX != 0 {
			exec = append(exec, unwind.Range{Lo: s.Vaddr - base, Hi: s.Vaddr + s.Memsz - base})
		}
	}
	bare, err := unwind.NewTable(nil, exec)
	if err != nil {
		t.Fatal(err)
	}
	return im, unwind.NewSpace([]unwind.Image{{Base: base, Size: hi - base, Table: tab}}),
		unwind.NewSpace([]unwind.Image{{Base: base, Size: hi - base, Table: bare}})
}

// TestUnwindWorkloads walks the call chain at every sample of real
// programs and checks it against the code: each return address must
// follow a call (bsr or jsr); a bsr's callee must be the procedure the
// inner frame is in, or reach it by a tail branch; and every chain the
// walk did not truncate must end in _start, the outermost procedure.
// The prologue heuristic alone is checked against the same walks.
func TestUnwindWorkloads(t *testing.T) {
	if racedetect.Enabled {
		t.Skip("one goroutine's simulation checked against the code: nothing for the race detector, and minutes under it")
	}
	for _, c := range []struct {
		name string
		args []string
		// minimum share of samples whose heuristic walk equals the
		// table's: interp spends its time in a procedure of 4,300
		// instructions, whose prologue lies beyond the scan's bound
		heurAgree float64
	}{{"recurse", nil, 0.3}, {"interp", nil, 0}, {"ccdriver", nil, 0.6}} {
		if !longtest.Keep(c.name, "ccdriver", "recurse") { // CI: interp's chains with DCPI_LONG=1
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			im, cfi, heur := spaces(t, c.name)
			w := &walker{cfi: cfi, heur: heur}
			prof := hwsim.DefaultProfile()
			prof.Counters[0].PeriodMin, prof.Counters[0].PeriodMax = 6000, 6400
			codetest.RunWorkload(t, c.name, c.args, prof, w)
			if w.user < 200 {
				t.Fatalf("only %d user samples", w.user)
			}
			startSym := symbol(t, im, "_start")
			var frames, tail, full, capped int
			for i, ch := range w.chains {
				for k := 1; k < len(ch); k++ {
					frames++
					call := ch[k] - 4
					insn := word(t, im, call)
					op := insn >> 26
					isBSR := op == 0x34
					isJSR := op == 0x1a && insn>>14&3 == 1
					if !isBSR && !isJSR {
						t.Fatalf("sample %d frame %d: return address %#x does not follow a call (%#08x); chain %#x", i, k, ch[k], insn, ch)
					}
					if isBSR {
						target := call + 4 + uint64(int64(int32(insn<<11)>>11)*4)
						callee := procOf(t, im, target)
						inner := procOf(t, im, ch[k-1]-boolU(k > 1)*4)
						if callee != inner {
							if !branchesTo(im, callee, inner) {
								t.Fatalf("sample %d frame %d: call at %#x is to %s, but the inner frame (%#x) is in %s", i, k, call, callee.Name, ch[k-1], inner.Name)
							}
							tail++
						}
					}
				}
				switch {
				case len(ch) == wire.MaxStackFrames:
					capped++
				case !w.truncated[i]:
					full++
					if last := ch[len(ch)-1]; len(ch) > 1 && procOf(t, im, last-4) != startSym {
						t.Fatalf("sample %d: untruncated chain ends in %s, not _start: %#x", i, procOf(t, im, last-4).Name, ch)
					}
				}
			}
			n := len(w.chains)
			t.Logf("%d user samples: %d reached _start, %d at the depth cap, %d truncated otherwise; %d frames (%d through tail calls), %.1f reads a walk; heuristic alone: %.1f%% identical, %.1f%% complete, %.2f%% of its frames wrong",
				n, full, capped, n-full-capped, frames, tail, float64(w.reads)/float64(n),
				100*float64(w.heurSame)/float64(n), 100*float64(w.heurFull)/float64(n), 100*float64(w.heurWrong)/float64(w.heurFrames))
			if float64(full+capped) < 0.95*float64(n) {
				t.Errorf("only %d of %d walks reached _start or the depth cap", full+capped, n)
			}
			if w.heurWrong*10 > w.heurFrames {
				t.Errorf("heuristic: %d of its %d frames differ from the table walk's", w.heurWrong, w.heurFrames)
			}
			if float64(w.heurSame) < c.heurAgree*float64(n) {
				t.Errorf("heuristic agrees on %d of %d walks, want %.0f%%", w.heurSame, n, 100*c.heurAgree)
			}
		})
	}
}

func boolU(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func word(t *testing.T, im *elfimage.Image, addr uint64) uint32 {
	t.Helper()
	seg, ok := im.SegmentFor(addr)
	if !ok || addr-seg.Vaddr+4 > uint64(len(seg.Data)) {
		t.Fatalf("%#x: not in the image's file data", addr)
	}
	o := addr - seg.Vaddr
	d := seg.Data[o : o+4]
	return uint32(d[0]) | uint32(d[1])<<8 | uint32(d[2])<<16 | uint32(d[3])<<24
}

func procOf(t *testing.T, im *elfimage.Image, addr uint64) elfimage.Symbol {
	t.Helper()
	sym, _, ok := im.Lookup(addr)
	if !ok {
		t.Fatalf("%#x: in no procedure", addr)
	}
	return sym
}

func symbol(t *testing.T, im *elfimage.Image, name string) elfimage.Symbol {
	for _, s := range im.Symbols {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no symbol %s", name)
	return elfimage.Symbol{}
}

// branchesTo reports whether proc ends in a tail call that can reach
// inner: a br/bsr into inner, or an indirect jmp.
func branchesTo(im *elfimage.Image, proc, inner elfimage.Symbol) bool {
	seg, ok := im.SegmentFor(proc.Addr)
	if !ok || proc.Size == 0 {
		return false
	}
	for a := proc.Addr; a < proc.Addr+proc.Size && a-seg.Vaddr+4 <= uint64(len(seg.Data)); a += 4 {
		o := a - seg.Vaddr
		d := seg.Data[o : o+4]
		insn := uint32(d[0]) | uint32(d[1])<<8 | uint32(d[2])<<16 | uint32(d[3])<<24
		switch op := insn >> 26; {
		case op == 0x30: // br
			if target := a + 4 + uint64(int64(int32(insn<<11)>>11)*4); target >= inner.Addr && target < inner.Addr+max(inner.Size, 4) {
				return true
			}
		case op == 0x1a && insn>>14&3 == 0: // jmp
			return true
		}
	}
	return false
}
