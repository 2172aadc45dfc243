package alpha

import (
	"testing"
)

// benchLoop is a tight loop of the kind compiled C spends its time in:
// loads, arithmetic, a store, a compare and a branch per iteration.
//
//	loop: ldq   r4, 0(r3)
//	      addq  r4, r1, r4
//	      stq   r4, 0(r3)
//	      s8addq r1, r3, r5
//	      xor   r5, r2, r2
//	      lda   r3, 8(r3)     ; walk one page, then wrap
//	      and   r3, r6, r3
//	      bis   r3, r7, r3
//	      subq  r1, 1, r1
//	      bne   r1, loop
var benchLoop = []uint32{
	encMem(0x29, 4, 3, 0),
	encOp(0x10, 0x20, 4, 1, 4),
	encMem(0x2d, 4, 3, 0),
	encOp(0x10, 0x32, 1, 3, 5),
	encOp(0x11, 0x40, 5, 2, 2),
	encMem(0x08, 3, 3, 8),
	encOp(0x11, 0x00, 3, 6, 3),
	encOp(0x11, 0x20, 3, 7, 3),
	encOpLit(0x10, 0x29, 1, 1, 1),
	encBr(0x3d, 1, -10),
}

// BenchmarkExecute measures the interpreter on benchLoop and reports
// simulated instructions per second of one host core.
func BenchmarkExecute(b *testing.B) { benchmarkLoop(b, false) }

// BenchmarkExecuteTimed is BenchmarkExecute with the 21164 issue model over
// a perfect memory system: the cost of timing itself.
func BenchmarkExecuteTimed(b *testing.B) { benchmarkLoop(b, true) }

func benchmarkLoop(b *testing.B, timed bool) {
	c := loadProgram(EV5, codeBase, append(benchLoop, halt), dataBase)
	if timed {
		NewTiming(c, PerfectMemory{})
	}
	const iters = 1 << 20
	b.ReportAllocs()
	b.ResetTimer()
	var insns uint64
	for i := 0; i < b.N; i++ {
		c.PC = codeBase
		c.R[1], c.R[3], c.R[6], c.R[7] = iters, dataBase, PageSize-1, dataBase
		insns += c.Run(^uint64(0))
		if c.Trap.Kind != TrapSyscall {
			b.Fatalf("stopped with %v", c.Trap)
		}
	}
	b.ReportMetric(float64(insns)/b.Elapsed().Seconds()/1e6, "Minsn/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(insns), "ns/insn")
}

// BenchmarkNativeLoop is the baseline: the same computation as benchLoop
// written in Go, per "instruction" of the simulated loop (10 per
// iteration), so the two figures compare directly.
func BenchmarkNativeLoop(b *testing.B) {
	var mem [PageSize / 8]uint64
	const iters = 1 << 20
	var x, insns uint64
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		p := uint64(0)
		for r1 := uint64(iters); r1 != 0; r1-- {
			mem[p>>3&(PageSize/8-1)] += r1
			x ^= r1*8 + p
			p = (p + 8) & (PageSize - 1)
		}
		insns += iters * 10
	}
	sink = x
	b.ReportMetric(float64(insns)/b.Elapsed().Seconds()/1e6, "Minsn/s")
}

var sink uint64
