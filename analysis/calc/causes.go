package calc

import "dcpi/hwsim/alpha"

// CauseCheck is one of Figure 4's rows held to measured stall cycles: the
// share of the procedure's cycles the measurement charges to the row's
// causes, and the range the summary reported for them.
type CauseCheck struct {
	Row string
	// Measured is the share of the measured cycles; Cycles the stall
	// cycles behind it.
	Measured float64
	Cycles   float64
	Reported Range
}

// In reports whether the measured share lies in the reported range
// widened by tol on each side (0.02: two points).
func (c CauseCheck) In(tol float64) bool {
	return c.Measured >= c.Reported.Lo-tol && c.Measured <= c.Reported.Hi+tol
}

// Miss is how far the measured share lies outside the range (0 inside).
func (c CauseCheck) Miss() float64 {
	switch {
	case c.Measured < c.Reported.Lo:
		return c.Reported.Lo - c.Measured
	case c.Measured > c.Reported.Hi:
		return c.Measured - c.Reported.Hi
	}
	return 0
}

// CompareCauses holds a summary's rows to hwsim's stall cycles by cause
// (stall, summed over the instructions the summary tallied) and their
// cycles at the head of the issue queue (head): the measured share of
// each row is its causes' cycles over head. hwsim's causes map to the rows
// one to one, except:
//
//   - ra and rb are one row, "Ra/Rb dependency": the static Ra and Rb
//     shares plus the dynamic Other range, which is a dependency the
//     block's schedule could not see (on a value from before the block,
//     from a callee or a caller) and which hwsim charges to ra or rb;
//   - imul and fdiv are one row, "FU dependency": the static FU share
//     (the unit busy within the block) plus the IMUL busy and FDIV busy
//     ranges (busy from before the block);
//   - pal (rdpic, hwsim's extension for instrumented programs) has no
//     row: dcpicalc knows no such cause, and uninstrumented code never
//     waits on it.
//
// Static rows have one value, so their range is a point.
func CompareCauses(s *Summary, stall [alpha.NumStallCauses]float64, head float64) []CauseCheck {
	if head <= 0 {
		return nil
	}
	d := &s.Dynamic
	row := func(name string, r Range, causes ...alpha.StallCause) CauseCheck {
		var c float64
		for _, sc := range causes {
			c += stall[sc]
		}
		return CauseCheck{Row: name, Measured: c / head, Cycles: c, Reported: r}
	}
	add := func(a, b Range) Range { return Range{a.Lo + b.Lo, a.Hi + b.Hi} }
	point := func(x float64) Range { return Range{x, x} }
	return []CauseCheck{
		row(ICache.String(), d[ICache], alpha.StallICache),
		row(ITB.String(), d[ITB], alpha.StallITB),
		row(DCache.String(), d[DCache], alpha.StallDCache),
		row(DTB.String(), d[DTB], alpha.StallDTB),
		row(WriteBuffer.String(), d[WriteBuffer], alpha.StallWBuf),
		row(Sync.String(), d[Sync], alpha.StallBarrier),
		row(Mispredict.String(), d[Mispredict], alpha.StallMispred),
		row(Slotting.String(), point(s.Static[Slotting]), alpha.StallSlot),
		row("Ra/Rb dependency", add(point(s.Static[RaDep]+s.Static[RbDep]), d[Other]), alpha.StallRa, alpha.StallRb),
		row(FUDep.String(), add(point(s.Static[FUDep]), add(d[IMULBusy], d[FDIVBusy])), alpha.StallIMul, alpha.StallFDiv),
	}
}
