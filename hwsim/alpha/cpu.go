package alpha

import "fmt"

// TrapKind says why a CPU stopped executing user code.
type TrapKind uint8

// Traps and stops. The OS layer (package hwsim) turns each into a system
// call, a signal or a fault report.
const (
	TrapNone       TrapKind = iota
	TrapSyscall             // CALL_PAL callsys: the OS handles the system call
	TrapSegv                // unmapped address or permission: SIGSEGV
	TrapIllegal             // reserved opcode or missing extension: SIGILL
	TrapUnimpl              // an instruction hwsim does not implement
	TrapBreakpoint          // bpt/bugchk: SIGTRAP
	TrapGentrap             // gentrap: SIGFPE (glibc raises integer division by zero this way)
	TrapArith               // an arithmetic trap the program enabled: SIGFPE
	TrapHalt                // a PAL call user mode may not make: SIGILL
	TrapSimcall             // kernel mode CALL_PAL cserve: a request to the simulator
	TrapReturn              // kernel mode CALL_PAL rti or retsys: back to user mode
	TrapEvent               // the cycle counter reached the next event
	TrapWait                // kernel mode CALL_PAL wtint: idle until an interrupt
	// TrapSquash never stops a CPU: it is ProfileMe's abort reason
	// (MeRecord.Abort) for an instruction the 21264 core squashed, fetched
	// on a mispredicted path or younger than a trap or interrupt.
	TrapSquash
)

var trapNames = [...]string{"none", "syscall", "segmentation fault", "illegal instruction",
	"unimplemented instruction", "breakpoint", "gentrap", "arithmetic trap", "privileged PAL call",
	"simulator call", "return from kernel", "event", "wait for interrupt", "squashed"}

func (k TrapKind) String() string {
	if int(k) < len(trapNames) {
		return trapNames[k]
	}
	return fmt.Sprintf("trap(%d)", k)
}

// Trap describes the event that stopped execution.
type Trap struct {
	Kind TrapKind
	PC   uint64 // the instruction that trapped
	Addr uint64 // faulting data address, for TrapSegv
	Word uint32 // the instruction word, for TrapIllegal and TrapUnimpl
	Code uint64 // gentrap code (a0), or PAL function
}

func (t Trap) String() string {
	switch t.Kind {
	case TrapSegv:
		return fmt.Sprintf("%s at pc %#x, address %#x", t.Kind, t.PC, t.Addr)
	case TrapIllegal, TrapUnimpl:
		return fmt.Sprintf("%s at pc %#x: encoding %#08x", t.Kind, t.PC, t.Word)
	case TrapGentrap:
		return fmt.Sprintf("%s %d at pc %#x", t.Kind, int64(t.Code), t.PC)
	}
	return fmt.Sprintf("%s at pc %#x", t.Kind, t.PC)
}

// Context is the architectural state of one thread of user execution: what
// the OS saves and restores at a context switch.
type Context struct {
	R      [32]uint64
	F      [32]uint64
	PC     uint64
	FPCR   FPCR
	Unique uint64 // the PAL "unique" value: glibc's thread pointer
}

const tlbEntries = 256

type tlbEntry struct {
	tag  uint64 // vpn+1; zero means empty
	page *Page
}

// tlbSet is the translations of one mode. Kernel and user mode keep
// separate sets, so a translation filled in kernel mode, where kernel pages
// are reachable, is never used by user code.
type tlbSet struct {
	r, w [tlbEntries]tlbEntry
}

// KernelBase is where the kernel's address space begins: addresses at or
// above it are translated through CPU.KAS and only in kernel mode. It lies
// above Linux/Alpha's user TASK_SIZE and inside the 21164's 43-bit virtual
// address space.
const KernelBase = 0x60000000000

const kernelVPN = KernelBase >> PageShift

// CPU is one Alpha processor executing user code of one address space at a
// time. It is not safe for concurrent use: each CPU belongs to one host
// goroutine at a time.
type CPU struct {
	// R and F are the register files, with a slot for SinkReg past the 32
	// architectural registers; R[31] and F[31] always read as zero.
	R    [64]uint64
	F    [64]uint64
	PC   uint64
	FPCR FPCR
	// Unique is the PAL process-unique value (rduniq/wruniq).
	Unique uint64

	Model Model
	// ID is the CPU number WHAMI reports.
	ID int
	// AS is the current process's address space, nil when none runs.
	AS *AddressSpace
	// KAS is the kernel's address space, shared by every CPU: addresses
	// from KernelBase up, reachable in kernel mode only.
	KAS *AddressSpace
	// Kernel is set while the CPU runs in kernel mode.
	Kernel bool
	// IPL is the interrupt priority level (SWPIPL).
	IPL uint8

	// Retired counts instructions completed since the CPU was made.
	Retired uint64
	// Cycle is the cycle counter RPCC reads; the OS advances it.
	Cycle uint64

	// Trap is set when Run stops for anything but an exhausted budget.
	Trap Trap

	// Timing is the 21164 issue model; nil runs one instruction a cycle.
	Timing *Timing
	// Core, when Timing is nil, is another timing model (the 21264's
	// out-of-order core, package hwsim/ev6).
	Core Core
	// PMU is the performance counters.
	PMU PMU
	// PICEvents are the two events rdpic (PalRDPIC) returns, in v0 and
	// t0; they must be events PMU.Totals counts (not cycles or issues).
	// PICBase is what rdpic adds to the PMU's totals so that the counts
	// are the running process's: the simulator sets it whenever the
	// process on the CPU may have changed.
	PICEvents [2]Event
	PICBase   [2]uint64
	// Me is the ProfileMe hardware (profileme.go); nil when off, which
	// costs Run one check per instruction.
	Me    *ProfileMe
	meTag meTag
	// meHist is ProfileMe's path-history register on the 21164 model
	// (the 21264 core keeps its own): conditional branch directions,
	// newest in bit 0, kept while ProfileMe is on.
	meHist uint16
	// OnTransfer, when set, is called after every instruction Run
	// executes whose successor is not pc+4 (a branch taken, a jump, a
	// call, a return, a PAL call that redirects): ground truth for
	// hwsim's transfer observer (hwsim/oracle.go). Nil costs one check.
	OnTransfer func(from, to uint64)

	// lock is the LDx_L/STx_C lock flag and the locked address's quadword.
	lockValid bool
	lockAddr  uint64

	// codeStale is set when a store dropped the decoding of a page, so the
	// interpreter must fetch through the page table again.
	codeStale bool

	// stepOnly makes Run return after one instruction (Step), by way of
	// codeStale, so the common path tests nothing more.
	stepOnly bool

	asGen uint64  // AS.gen the TLBs were filled under
	tlb   *tlbSet // the current mode's
	utlb  tlbSet
	ktlb  tlbSet
}

// NewCPU returns a CPU of model m with no address space.
func NewCPU(m Model) *CPU {
	c := &CPU{Model: m}
	c.tlb = &c.utlb
	c.PMU.update()
	return c
}

// SetMode switches between user and kernel mode.
func (c *CPU) SetMode(kernel bool) {
	c.Kernel = kernel
	if kernel {
		c.tlb = &c.ktlb
	} else {
		c.tlb = &c.utlb
	}
}

// asFor returns the address space that translates vpn in the current mode,
// or nil.
func (c *CPU) asFor(vpn uint64) *AddressSpace {
	if vpn >= kernelVPN {
		if !c.Kernel {
			return nil
		}
		return c.KAS
	}
	return c.AS
}

// Load switches the CPU to ctx in address space as (a context switch).
func (c *CPU) Load(ctx *Context, as *AddressSpace) {
	copy(c.R[:32], ctx.R[:])
	copy(c.F[:32], ctx.F[:])
	c.R[31], c.F[31] = 0, 0
	c.PC, c.FPCR, c.Unique = ctx.PC, ctx.FPCR, ctx.Unique
	c.lockValid = false
	// Always start with empty translations: the process may have run on
	// another CPU since, and pages may have been shared, copied or decoded.
	c.AS = as
	c.flushTLB()
}

// ClearLock clears the LDx_L/STx_C lock flag, so the next STx_C fails: what
// another processor's store to the locked block does on the real machine.
func (c *CPU) ClearLock() { c.lockValid = false }

// Save stores the CPU's architectural state into ctx.
func (c *CPU) Save(ctx *Context) {
	copy(ctx.R[:], c.R[:32])
	copy(ctx.F[:], c.F[:32])
	ctx.PC, ctx.FPCR, ctx.Unique = c.PC, c.FPCR, c.Unique
}

func (c *CPU) flushTLB() {
	c.utlb = tlbSet{}
	c.ktlb = tlbSet{}
	if c.AS != nil {
		c.asGen = c.AS.gen
	}
}

// readPage translates vpn for a load, filling the read TLB.
func (c *CPU) readPage(vpn uint64) *Page {
	e := &c.tlb.r[vpn%tlbEntries]
	if e.tag == vpn+1 {
		return e.page
	}
	as := c.asFor(vpn)
	if as == nil {
		return nil
	}
	p := as.page(vpn)
	if p == nil || p.perm&PermR == 0 {
		return nil
	}
	*e = tlbEntry{tag: vpn + 1, page: p}
	return p
}

// writePage translates vpn for a store. Only private pages without decoded
// code enter the write TLB, so its hits need no further checks.
func (c *CPU) writePage(vpn uint64) *Page {
	e := &c.tlb.w[vpn%tlbEntries]
	if e.tag == vpn+1 {
		return e.page
	}
	as := c.asFor(vpn)
	if as == nil {
		return nil
	}
	gen := as.gen
	p, ok := as.writablePage(vpn)
	if !ok {
		return nil
	}
	if as.gen != gen {
		c.flushTLB() // privatizing replaced a page other entries may name
	}
	if p.code.Load() != nil {
		p.code.Store(nil)
		c.codeStale = true
	}
	c.tlb.w[vpn%tlbEntries] = tlbEntry{tag: vpn + 1, page: p}
	return p
}

// Aligned accesses never cross a page; unaligned ones are completed the way
// Linux's unaligned-access fixup completes them, byte by byte.

func (c *CPU) load64(a uint64) (uint64, bool) {
	if a&7 == 0 {
		if p := c.readPage(a >> PageShift); p != nil {
			return p.W[(a&pageMask)>>3], true
		}
		return 0, false
	}
	return c.loadUnaligned(a, 8)
}

func (c *CPU) load32(a uint64) (uint32, bool) {
	if a&3 == 0 {
		if p := c.readPage(a >> PageShift); p != nil {
			return uint32(p.W[(a&pageMask)>>3] >> ((a & 4) * 8)), true
		}
		return 0, false
	}
	v, ok := c.loadUnaligned(a, 4)
	return uint32(v), ok
}

func (c *CPU) load16(a uint64) (uint16, bool) {
	if a&1 == 0 {
		if p := c.readPage(a >> PageShift); p != nil {
			return uint16(p.W[(a&pageMask)>>3] >> ((a & 6) * 8)), true
		}
		return 0, false
	}
	v, ok := c.loadUnaligned(a, 2)
	return uint16(v), ok
}

func (c *CPU) load8(a uint64) (uint8, bool) {
	if p := c.readPage(a >> PageShift); p != nil {
		return uint8(p.W[(a&pageMask)>>3] >> ((a & 7) * 8)), true
	}
	return 0, false
}

func (c *CPU) loadUnaligned(a uint64, n int) (uint64, bool) {
	var v uint64
	for i := n - 1; i >= 0; i-- {
		b, ok := c.load8(a + uint64(i))
		if !ok {
			c.Trap.Addr = a + uint64(i)
			return 0, false
		}
		v = v<<8 | uint64(b)
	}
	return v, true
}

func (c *CPU) store64(a, v uint64) bool {
	if a&7 == 0 {
		if p := c.writePage(a >> PageShift); p != nil {
			p.W[(a&pageMask)>>3] = v
			return true
		}
		return false
	}
	return c.storeUnaligned(a, v, 8)
}

func (c *CPU) store32(a uint64, v uint32) bool {
	if a&3 == 0 {
		if p := c.writePage(a >> PageShift); p != nil {
			w := &p.W[(a&pageMask)>>3]
			sh := (a & 4) * 8
			*w = *w&^(0xffffffff<<sh) | uint64(v)<<sh
			return true
		}
		return false
	}
	return c.storeUnaligned(a, uint64(v), 4)
}

func (c *CPU) store16(a uint64, v uint16) bool {
	if a&1 == 0 {
		if p := c.writePage(a >> PageShift); p != nil {
			w := &p.W[(a&pageMask)>>3]
			sh := (a & 6) * 8
			*w = *w&^(0xffff<<sh) | uint64(v)<<sh
			return true
		}
		return false
	}
	return c.storeUnaligned(a, uint64(v), 2)
}

func (c *CPU) store8(a uint64, v uint8) bool {
	if p := c.writePage(a >> PageShift); p != nil {
		setPageByte(p, a, v)
		return true
	}
	return false
}

func (c *CPU) storeUnaligned(a, v uint64, n int) bool {
	// Check every byte's page first so a faulting store changes nothing.
	for i := 0; i < n; i++ {
		if c.writePage((a+uint64(i))>>PageShift) == nil {
			c.Trap.Addr = a + uint64(i)
			return false
		}
	}
	for i := 0; i < n; i++ {
		c.store8(a+uint64(i), uint8(v>>(8*i)))
	}
	return true
}

// fetchPage returns the decoded instructions of the page holding pc,
// decoding it on first use. Pages are shared between CPUs after fork, so
// the decoded form is published atomically; two CPUs racing to decode the
// same page produce identical arrays and either may win.
func (c *CPU) fetchPage(pc uint64) *codePage {
	as := c.asFor(pc >> PageShift)
	if as == nil {
		return nil
	}
	p := as.page(pc >> PageShift)
	if p == nil || p.perm&PermX == 0 {
		return nil
	}
	if cp := p.code.Load(); cp != nil && cp.model == c.Model.Name {
		return cp
	}
	cp := &codePage{model: c.Model.Name}
	for i := range cp.insn {
		w := p.W[i>>1] >> ((i & 1) * 32)
		cp.insn[i] = Decode(uint32(w), c.Model)
	}
	p.code.Store(cp)
	// Any write translation to this page must now go through writePage
	// again so that a store drops the decoding.
	c.utlb.w[(pc>>PageShift)%tlbEntries] = tlbEntry{}
	c.ktlb.w[(pc>>PageShift)%tlbEntries] = tlbEntry{}
	return cp
}

// FetchWord reads the instruction word at pc (for fault reports and tools).
func (c *CPU) FetchWord(pc uint64) (uint32, bool) {
	as := c.asFor(pc >> PageShift)
	if as == nil {
		return 0, false
	}
	p := as.page(pc >> PageShift)
	if p == nil {
		return 0, false
	}
	return uint32(p.W[(pc&pageMask)>>3] >> ((pc & 4) * 8)), true
}

// dataPhys returns the physical address of a data address the CPU has just
// accessed (its translation is in the TLB), or the virtual address tagged
// above the 43-bit space if it is not.
func (c *CPU) dataPhys(va uint64) uint64 {
	vpn := va >> PageShift
	if e := &c.tlb.r[vpn%tlbEntries]; e.tag == vpn+1 {
		return e.page.frame<<PageShift | va&pageMask
	}
	if e := &c.tlb.w[vpn%tlbEntries]; e.tag == vpn+1 {
		return e.page.frame<<PageShift | va&pageMask
	}
	return va | 1<<62
}

// codePhys returns the physical address of an instruction address.
func (c *CPU) codePhys(pc uint64) uint64 {
	if as := c.asFor(pc >> PageShift); as != nil {
		if p := as.page(pc >> PageShift); p != nil {
			return p.frame<<PageShift | pc&pageMask
		}
	}
	return pc | 1<<62
}
