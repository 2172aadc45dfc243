package cfg

import (
	"fmt"
	"sort"

	"dcpi/hwsim/alpha"
)

// Proc is the control-flow graph of one procedure. Nodes 0..len(Blocks)-1
// are the real blocks in address order; Entry() and Exit() are two virtual
// nodes after them. Edges are numbered by their index in Edges; each block
// lists the edges that leave it (Succs) and enter it (Preds).
type Proc struct {
	Name       string
	Start, End uint64 // [Start, End): every instruction of the procedure
	// Insns holds every instruction in [Start, End), one per 4 bytes.
	Insns  []Insn
	Blocks []Block
	Edges  []Edge
	// Calls are the call sites (bsr, jsr) in address order.
	Calls []Call
	// Jumps are the jmp instructions (not ret, not jsr) in address order,
	// each with how its targets were found or why they were not.
	Jumps []Jump
	// MissingEdges is set when some jmp could not be resolved: the graph
	// lacks that jmp's successors.
	MissingEdges bool
	// Entries are the addresses control enters at: Start first, then the
	// alternate entries other code branches or calls to (gcc's "..ng"
	// entry past the gp setup), in address order.
	Entries []uint64

	// entryOut and exitIn are Entry's out-edges and Exit's in-edges.
	entryOut, exitIn []int
}

// Insn is one instruction of a procedure.
type Insn struct {
	PC   uint64
	Word uint32
	Dec  alpha.Decoded
}

// Block is a basic block: instructions [Start, End) that execute together.
type Block struct {
	Start, End uint64
	Succs      []int // indices into Proc.Edges
	Preds      []int
	// Reachable is whether a path from Entry reaches the block.
	Reachable bool
	// ReachesExit is whether a path from the block reaches Exit. False for
	// the blocks of an infinite loop (and for blocks ending in an
	// unresolved jmp with no other way out).
	ReachesExit bool
}

// Len returns the block's instruction count.
func (b *Block) Len() int { return int((b.End - b.Start) / 4) }

// EdgeKind says why control flows along an edge.
type EdgeKind uint8

// Edge kinds.
const (
	Fallthrough EdgeKind = iota // to the next instruction: a non-branch, or a conditional branch not taken
	Taken                       // a branch (conditional or br) taken, within the procedure
	JumpTable                   // a resolved jmp to a target within the procedure
	Entry                       // from the virtual Entry node to an entry block
	Return                      // ret, rti or retsys, to Exit
	TailCall                    // a branch or jmp to a procedure's entry, to Exit
	Outside                     // a branch or jmp elsewhere outside the procedure, to Exit
	FallOut                     // running off the procedure's end into the next, to Exit
	Halt                        // halt or an undecodable word, to Exit
)

var edgeKindNames = [...]string{"fallthrough", "taken", "jumptable", "entry", "return", "tailcall", "outside", "fallout", "halt"}

func (k EdgeKind) String() string {
	if int(k) < len(edgeKindNames) {
		return edgeKindNames[k]
	}
	return fmt.Sprintf("EdgeKind(%d)", uint8(k))
}

// Edge is one control-flow edge between two nodes. At most one edge joins
// a pair of nodes: a conditional branch to the next instruction, or jump
// table entries that share a target, give one edge.
type Edge struct {
	From, To int
	Kind     EdgeKind
	// PC is the instruction that transfers control (the block's last;
	// for Entry edges, the entry address).
	PC uint64
	// Target is the address control goes to when it leaves the procedure
	// (TailCall, Outside, FallOut), 0 if unknown.
	Target uint64
}

// Call is one call site. Calls do not end blocks unless
// Options.SplitAtCalls was set.
type Call struct {
	PC     uint64
	Block  int
	Target uint64 // the callee's address, when known
	Known  bool
	// Indirect is set for jsr (through a register), clear for bsr.
	Indirect bool
	// NoReturn is set when the known callee has no way out (no ret, no
	// jmp, no branch beyond itself): abort, exit and their wrappers. The
	// graph still keeps the call's fall-through (see the package doc).
	NoReturn bool
}

// Jump is one indirect jmp (not a ret or jsr).
type Jump struct {
	PC    uint64
	Block int
	// Resolved is set when Targets are all the places the jmp can go.
	Resolved bool
	// Table is the jump table's address and Entries its length, when the
	// jmp goes through one.
	Table   uint64
	Entries int
	// Targets are the distinct destinations, in address order.
	Targets []uint64
	// Note says how the jmp was resolved, or why it was not.
	Note string
}

// NumNodes returns the number of nodes: the blocks, Entry and Exit.
func (p *Proc) NumNodes() int { return len(p.Blocks) + 2 }

// Entry returns the virtual entry node.
func (p *Proc) Entry() int { return len(p.Blocks) }

// Exit returns the virtual exit node.
func (p *Proc) Exit() int { return len(p.Blocks) + 1 }

// Out returns the edges leaving node n (a block, Entry or Exit).
func (p *Proc) Out(n int) []int {
	switch {
	case n >= 0 && n < len(p.Blocks):
		return p.Blocks[n].Succs
	case n == p.Entry():
		return p.entryOut
	}
	return nil
}

// In returns the edges entering node n.
func (p *Proc) In(n int) []int {
	switch {
	case n >= 0 && n < len(p.Blocks):
		return p.Blocks[n].Preds
	case n == p.Exit():
		return p.exitIn
	}
	return nil
}

// Successors returns the nodes edges from n lead to.
func (p *Proc) Successors(n int) []int {
	out := p.Out(n)
	s := make([]int, len(out))
	for i, e := range out {
		s[i] = p.Edges[e].To
	}
	return s
}

// Predecessors returns the nodes of the edges into n.
func (p *Proc) Predecessors(n int) []int {
	in := p.In(n)
	s := make([]int, len(in))
	for i, e := range in {
		s[i] = p.Edges[e].From
	}
	return s
}

// BlockOf returns the block holding the instruction at pc.
func (p *Proc) BlockOf(pc uint64) (int, bool) {
	if pc < p.Start || pc >= p.End || pc%4 != 0 {
		return -1, false
	}
	i := sort.Search(len(p.Blocks), func(i int) bool { return p.Blocks[i].End > pc })
	return i, i < len(p.Blocks)
}

// Insn returns the instruction at pc.
func (p *Proc) Insn(pc uint64) (Insn, bool) {
	if pc < p.Start || pc >= p.End || pc%4 != 0 {
		return Insn{}, false
	}
	return p.Insns[(pc-p.Start)/4], true
}

// BlockInsns returns block b's instructions.
func (p *Proc) BlockInsns(b int) []Insn {
	bl := &p.Blocks[b]
	return p.Insns[(bl.Start-p.Start)/4 : (bl.End-p.Start)/4]
}

// NoExitBlocks returns the reachable blocks with no path to Exit (an
// infinite loop's, or those stranded by an unresolved jmp).
func (p *Proc) NoExitBlocks() []int {
	var out []int
	for i := range p.Blocks {
		if p.Blocks[i].Reachable && !p.Blocks[i].ReachesExit {
			out = append(out, i)
		}
	}
	return out
}
