package ev6

import "dcpi/hwsim/alpha"

// The execution pipelines (HRM §2.1, Table 2-2 as gcc's ev6.md encodes
// it): the integer Ebox has two clusters, each an upper and a lower
// subcluster (U0 and L0 in cluster 0, U1 and L1 in cluster 1); the Fbox
// has an add (FA) and a multiply (FM) pipeline.
const (
	pU0 uint8 = 1 << iota
	pU1
	pL0
	pL1
	pFA
	pFM
	pUpper = pU0 | pU1
	pLower = pL0 | pL1
	pEbox  = pUpper | pLower
)

// clusterOf is the integer cluster of an Ebox pipe.
func clusterOf(p uint8) int {
	if p&(pU1|pL1) != 0 {
		return 1
	}
	return 0
}

// class is the 21264 timing of one operation.
type class struct {
	pipes   uint8 // pipes it may issue to
	lat     int   // result latency (loads: on a D-cache hit)
	fpQueue bool  // queued in the FP issue queue, not the integer one
	cross   bool  // an Ebox result: one cycle later in the other cluster
	divider bool  // occupies the unpipelined FP divide/square-root unit
	serial  bool  // waits for every older instruction to retire (MB, TRAPB, CALL_PAL)
	base    alpha.IssueClass
}

// buildClasses returns the class of every operation under p, indexed by
// alpha.Op.
func buildClasses(p Params) []class {
	n := int(alpha.OpFTOIS) + 1
	cs := make([]class, n)
	for op := range n {
		o := alpha.Op(op)
		b := alpha.ClassOf(o)
		c := class{base: b, pipes: pEbox, lat: p.LatIntALU, cross: true}
		switch {
		case b.Load && (o == alpha.OpFETCH || o == alpha.OpWH64 || o == alpha.OpECB):
			c.pipes, c.lat, c.cross = pLower, p.LatLoad, false
		case b.Load:
			c.pipes, c.lat, c.cross = pLower, p.LatLoad, false
			if b.FPDst {
				c.lat = p.LatFPLoad
			}
		case b.Store:
			c.pipes, c.lat, c.cross = pLower, 0, false
		case b.Barrier:
			c.pipes, c.lat, c.cross, c.serial = pLower, 0, false, true
		case b.Branch && b.FPA:
			c.pipes, c.lat, c.cross, c.fpQueue = pFA, 0, false, true
		case b.Branch:
			c.pipes, c.lat, c.cross = pUpper, 0, false
		case b.Jump || o == alpha.OpBR:
			c.pipes, c.lat, c.cross = pUpper, p.LatBranch, false
		case o == alpha.OpCallPal || o == alpha.OpInvalid || o == alpha.OpUnimpl:
			c.pipes, c.lat, c.cross, c.serial = pUpper, 0, false, true
		case o == alpha.OpRPCC || o == alpha.OpRC || o == alpha.OpRS:
			c.pipes, c.lat = pL1, p.LatRPCC
		case b.Unit == alpha.UnitMul:
			c.pipes, c.lat = pU1, p.LatIMul
		case o >= alpha.OpCMOVLBS && o <= alpha.OpCMOVGT:
			c.lat = p.LatCmov
		case o == alpha.OpCTPOP || o == alpha.OpCTLZ || o == alpha.OpCTTZ || (o >= alpha.OpPERR && o <= alpha.OpMAXSW4):
			c.pipes, c.lat = pU0, p.LatIMisc
		case b.Pipes == alpha.PipeE0 && !b.FPDst: // shifts, byte manipulation
			c.pipes = pUpper
		case o == alpha.OpITOFS || o == alpha.OpITOFF || o == alpha.OpITOFT:
			c.pipes, c.lat, c.cross = pLower, p.LatITOF, false
		case o == alpha.OpFTOIT || o == alpha.OpFTOIS:
			c.pipes, c.lat, c.cross, c.fpQueue = pFA, p.LatFTOI, false, true
		case b.Unit == alpha.UnitFDiv || o == alpha.OpSQRTS || o == alpha.OpSQRTT:
			c.pipes, c.cross, c.fpQueue, c.divider = pFA, false, true, true
			switch o {
			case alpha.OpDIVS:
				c.lat = p.LatFDivS
			case alpha.OpSQRTS:
				c.lat = p.LatFSqrtS
			case alpha.OpSQRTT:
				c.lat = p.LatFSqrtT
			default:
				c.lat = p.LatFDivT
			}
		case b.Pipes&alpha.PipeFAM != 0:
			c.pipes, c.lat, c.cross, c.fpQueue = pFA, p.LatFP, false, true
			if b.Pipes == alpha.PipeFM {
				c.pipes = pFM
			}
		}
		cs[op] = c
	}
	return cs
}
