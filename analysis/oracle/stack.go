package oracle

import "dcpi/analysis/cct"

// Activation is one activation on a process's shadow stack, as Stack
// reports it: ground truth for checking a sampled call stack, which
// names the same frames by return address (a call site plus 4).
type Activation struct {
	Proc     uint64    // the procedure's entry; the address entered when outside every procedure
	CallSite uint64    // the call in the caller that made it (0: the first activation)
	RetAddr  uint64    // where its return goes (0: none, the first activation)
	Context  *cct.Node // its record in the image's tree (an ancestor's under recursion)
}

// Stack appends process pid's shadow stack to dst, innermost activation
// first, and returns it with the image the process runs. It reports what
// the oracle has followed up to the last transfer it was told of: called
// from a counter interrupt, the stack the interrupted instruction runs in.
// A process the oracle follows no stack for (unknown, its image
// unresolved, in exec) gives nil and dst unchanged. It only reads.
func (o *Oracle) Stack(pid int, dst []Activation) (*Image, []Activation) {
	p := o.procs[pid]
	if p == nil || p.img == nil || p.fresh {
		return nil, dst
	}
	for i := len(p.frames) - 1; i >= 0; i-- {
		f := p.frames[i]
		a := Activation{CallSite: f.callSite, RetAddr: f.retAddr, Context: f.node}
		if f.node != nil {
			a.Proc = f.node.Proc
		}
		dst = append(dst, a)
	}
	return p.img, dst
}
