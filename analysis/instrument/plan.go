package instrument

import (
	"fmt"
	"sort"

	"dcpi/analysis/cfg"
)

// point is one original instruction replaced by a branch to its stub, and
// what the stub does before (and around) the displaced instruction.
type point struct {
	pc   uint64
	word uint32
	// free are the integer registers dead before the instruction.
	free         regSet
	blockCounter int // -1: none
	branch       *BranchInfo
	jump         *JumpInfo
	syscall      bool
	path         *pathPoint // paths mode
}

// planned is the instrumentation of a whole image before it is laid out.
type planned struct {
	points   map[uint64]*point
	manifest *Manifest
}

// maxJumpSlots bounds a jump table's counter array (its targets' span in
// instructions).
const maxJumpSlots = 1 << 16

func condBranch(w uint32) bool {
	opc := w >> 26
	return opc >= 0x38 || opc == 0x31 || opc == 0x32 || opc == 0x33 || opc == 0x35 || opc == 0x36 || opc == 0x37
}

func branchTarget(pc uint64, w uint32) uint64 {
	return uint64(int64(pc) + 4 + int64(int32(w<<11)>>9))
}

// displaceable reports whether the instruction can run in a stub: all can
// (branches are re-encoded, link registers set to the original return
// address) except a jump whose link register is its own target register,
// whose link cannot be set before the jump reads it.
func displaceable(w uint32) bool {
	if w>>26 == opJMP {
		ra, rb := (w>>21)&31, (w>>16)&31
		return ra == regZero || ra != rb
	}
	return true
}

func plan(procs []*cfg.Proc, opt Options) (*planned, error) {
	pl := &planned{points: map[uint64]*point{}, manifest: &Manifest{Version: ManifestVersion, Mode: opt.Mode, DumpPath: opt.DumpPath}}
	m := pl.manifest
	at := func(p *cfg.Proc, live []regSet, pc uint64) *point {
		if pt := pl.points[pc]; pt != nil {
			return pt
		}
		i := (pc - p.Start) / 4
		pt := &point{pc: pc, word: p.Insns[i].Word, blockCounter: -1}
		if live != nil {
			pt.free = allRegs &^ live[i]
		}
		pl.points[pc] = pt
		return pt
	}
	for _, p := range procs {
		skip := ""
		if p.MissingEdges {
			skip = "indirect jump the CFG cannot resolve"
			for _, j := range p.Jumps {
				if !j.Resolved {
					skip = fmt.Sprintf("indirect jump at %#x the CFG cannot resolve (%s)", j.PC, j.Note)
					break
				}
			}
			if opt.Strict {
				return nil, refuse("procedure %s: %s", p.Name, skip)
			}
			m.Skipped = append(m.Skipped, Skip{Name: p.Name, Reason: skip})
		}
		var live []regSet
		if skip == "" {
			live = liveIn(p)
		}
		locked := lockWindows(p)
		// Every callsys, even in a skipped procedure, is hooked: the exit
		// path must dump, and a fork's child must start from zero.
		for bi := range p.Blocks {
			b := &p.Blocks[bi]
			if !b.Reachable {
				continue
			}
			for pc := b.Start; pc < b.End; pc += 4 {
				if w := p.Insns[(pc-p.Start)/4].Word; w == opPAL<<26|palCall {
					at(p, live, pc).syscall = true
				}
			}
		}
		if skip != "" {
			continue
		}
		pi := ProcInfo{Name: p.Name, Start: p.Start, End: p.End}
		for bi := range p.Blocks {
			b := &p.Blocks[bi]
			if !b.Reachable {
				continue
			}
			bl := BlockInfo{Start: b.Start, End: b.End, Counter: -1}
			if first := p.Insns[(b.Start-p.Start)/4].Word; displaceable(first) && !locked[b.Start] {
				bl.Counter = m.Counters
				m.Counters++
				at(p, live, b.Start).blockCounter = bl.Counter
			}
			pi.Blocks = append(pi.Blocks, bl)
			lastPC := b.End - 4
			last := p.Insns[(lastPC-p.Start)/4].Word
			switch {
			case locked[lastPC]:
			case condBranch(last):
				br := BranchInfo{PC: lastPC, Target: branchTarget(lastPC, last), Taken: m.Counters, Fall: m.Counters + 1}
				m.Counters += 2
				pi.Branches = append(pi.Branches, br)
				at(p, live, lastPC).branch = &pi.Branches[len(pi.Branches)-1]
			case last>>26 == opJMP && (last>>14)&3 == 0 && displaceable(last):
				for _, j := range p.Jumps {
					if j.PC != lastPC || !j.Resolved || len(j.Targets) == 0 {
						continue
					}
					ts := append([]uint64(nil), j.Targets...)
					sort.Slice(ts, func(a, b int) bool { return ts[a] < ts[b] })
					slots := int((ts[len(ts)-1]-ts[0])/4) + 1
					if slots > maxJumpSlots {
						break
					}
					pi.Jumps = append(pi.Jumps, JumpInfo{PC: lastPC, Lo: ts[0], Counter: m.Counters, Slots: slots, Targets: ts})
					m.Counters += slots
				}
			}
		}
		// Pointers into pi.Branches must be taken after it stops growing.
		for i := range pi.Branches {
			pl.points[pi.Branches[i].PC].branch = &pi.Branches[i]
		}
		for i := range pi.Jumps {
			at(p, live, pi.Jumps[i].PC).jump = &pi.Jumps[i]
		}
		m.Procs = append(m.Procs, pi)
	}
	hooked := false
	for _, pt := range pl.points {
		hooked = hooked || pt.syscall
	}
	if !hooked {
		return nil, refuse("no system call found to hook the exit path (exit_group) on")
	}
	return pl, nil
}

// lockWindow bounds how far after a load-locked the instrumenter looks for
// its store-conditional.
const lockWindow = 16

// lockWindows returns the addresses after an ldl_l/ldq_l up to and
// including the next stl_c/stq_c (in address order, within lockWindow
// instructions): counting code there would add stores inside the locked
// sequence, which a real 21164 may answer by failing the stx_c every time.
func lockWindows(p *cfg.Proc) map[uint64]bool {
	locked := map[uint64]bool{}
	for i, in := range p.Insns {
		if op := in.Word >> 26; op != 0x2a && op != 0x2b {
			continue
		}
		for j := i + 1; j < len(p.Insns) && j <= i+lockWindow; j++ {
			locked[p.Insns[j].PC] = true
			if op := p.Insns[j].Word >> 26; op == 0x2e || op == 0x2f {
				break
			}
		}
	}
	return locked
}
