package ev6

import "dcpi/hwsim/alpha"

// control resolves the control flow of the instruction just committed:
// it trains the predictors, and on a misprediction redirects fetch to
// next once the instruction has executed. It returns whether it
// mispredicted, where the front end went instead, and when fetch is
// redirected; the caller times the wrong path.
func (c *Core) control(d *alpha.Decoded, pd *pending, cl *class, pc, next uint64) (miss bool, predicted, redirect uint64) {
	taken := next != pc+4
	predicted = pc + 4 // where the front end went after pc
	penalty := 0
	switch {
	case cl.base.Branch:
		c.stats.Branches++
		pr := c.bp.predict(pc)
		if pr.taken {
			predicted = pc + 4 + uint64(d.Imm)
		}
		c.bp.update(pc, pr, taken)
		if pr.taken != taken {
			penalty = c.p.MispredictCycles
		}
	case d.Op == alpha.OpBR:
		predicted = next // direct: the slot stage computes the target
		if d.Ra&63 < 31 {
			c.ras.push(pc + 4) // BSR
		}
	case cl.base.Jump:
		i := int(pc>>2) & (len(c.jumpPred) - 1)
		switch d.Imm >> 14 & 3 {
		case 2: // RET
			predicted, _ = c.ras.pop()
		case 3: // JSR_COROUTINE
			predicted, _ = c.ras.pop()
			c.ras.push(pc + 4)
		default: // JMP, JSR: the line predictor's target
			predicted = c.jumpPred[i] - 1
			c.jumpPred[i] = next + 1
			if d.Imm>>14&3 == 1 {
				c.ras.push(pc + 4)
			}
		}
		if predicted != next {
			penalty = c.p.JSRMispredictCycles
			c.stats.JumpMisses++
		}
	}
	blk := pc / uint64(c.p.FetchBlockBytes)
	if penalty > 0 {
		pd.ev = pd.ev.With(alpha.EvBranchMP)
		c.stats.Mispredicts++
		// The abort penalty counts from the cycle after the branch's
		// fetch to the target's fetch when the branch issues as early as
		// it can (HRM Table 2-1); a later issue delays the redirect as
		// much.
		redirect = pd.issue + uint64(penalty+1-c.p.FetchToMap-c.p.MapToIssue)
		c.linePred[blk&uint64(len(c.linePred)-1)] = next/uint64(c.p.FetchBlockBytes) + 1
		return true, predicted, redirect
	}
	if next/uint64(c.p.FetchBlockBytes) == blk && !taken {
		return false, 0, 0 // the fetch block goes on
	}
	// Leaving the fetch block: the line predictor said where fetch went
	// next (the sequential block unless it learned otherwise); when it
	// was wrong and the branch predictor right, the slot stage redirects
	// fetch, a bubble.
	e := &c.linePred[blk&uint64(len(c.linePred)-1)]
	want := next/uint64(c.p.FetchBlockBytes) + 1
	if got := *e; (got == 0 && want != blk+2) || (got != 0 && got != want) {
		c.stats.LineMisses++
		c.setRedirect(pd.fetch+1+uint64(c.p.LineMissCycles), noCause)
		*e = want
	}
	if taken {
		c.fetchBlk = 0 // the target starts a new fetch block
	}
	return false, 0, 0
}

// wrongPath times the instructions the front end fetches along the
// predicted path from pc after the mispredicted instruction pd, until
// fetch is redirected at cycle redirect. They are decoded from memory
// (the page's current contents) and never executed: they occupy fetch
// slots, the I-cache and the line predictor's reads, map and issue with
// their dependences on older instructions' results and on each other,
// and a load that issues before the squash reads the D-cache (and the
// Bcache) at the address its base register holds, if no wrong-path
// instruction wrote that register — the architectural value, since the
// correct path stopped at the branch. They take no functional units from
// the correct path (older instructions have priority, and younger correct
// ones map after the squash) and cause no counted events: every one is an
// abort, recorded in Stages. hist is the path history the first of them
// was fetched after; the conditional branches among them shift their
// predicted directions in.
func (c *Core) wrongPath(pd *pending, pc, redirect uint64, hist uint16) {
	kill := redirect - 1 // the squash, the cycle before the new fetch
	var written [2][64]bool
	var ready [2][64]uint64
	fetch := pd.fetch
	blk := pd.fetchBlk
	n := c.fetchN // instructions of the branch's block fetched (Commit counted the branch)
	line := c.fetchLine
	mapc, mapN := c.mapCycle, c.mapN
	for count := 0; count < c.p.InFlight; count++ {
		b := pc/uint64(c.p.FetchBlockBytes) + 1
		if b != blk || n >= c.p.FetchWidth {
			fetch++
			blk, n = b, 0
			if l := pc/uint64(c.p.LineBytes) + 1; l != line {
				line = l
				pa, ok := c.cpu.PhysAddr(pc)
				if !ok {
					return
				}
				if !c.icache.Access(pa) {
					fetch += uint64(c.p.L2LoadCycles)
					if !c.l2.Access(pa) {
						fetch += uint64(c.p.MemoryCycles)
					}
				}
			}
		}
		if fetch >= redirect {
			return
		}
		w, ok := c.cpu.FetchWord(pc)
		if !ok {
			return
		}
		n++
		// Wrong paths are mostly the same few blocks again: each word
		// is decoded once (keyed by the word itself, so rewritten code
		// decodes anew).
		e := &c.wpDecoded[int(pc>>2)&(len(c.wpDecoded)-1)]
		if !e.ok || e.w != w {
			*e = wpDecoded{w: w, ok: true, d: alpha.Decode(w, c.cpu.Model)}
		}
		d := e.d
		cl := &c.classes[min(int(d.Op), len(c.classes)-1)]
		c.stats.WrongPath++
		rec := Record{PC: pc, Fetch: fetch, Retire: kill, Done: kill, History: hist,
			Load: cl.base.Load && !prefetch(d.Op)}
		st := c.stagesFor(pc)
		if st != nil {
			st.Aborted++
		}
		m := max(fetch+uint64(c.p.FetchToMap), mapc)
		if m == mapc && mapN >= c.p.MapWidth {
			m++
		}
		if m == mapc {
			mapN++
		} else {
			mapc, mapN = m, 1
		}
		if m <= kill && !cl.serial {
			if st != nil {
				st.AbortedMapped++
			}
			rec.Mapped, rec.Map = true, m
			t := m + uint64(c.p.MapToIssue)
			readyOf := func(r uint8, fp bool) uint64 {
				f := b2i(fp)
				if written[f][r&63] {
					return ready[f][r&63]
				}
				return c.readyOf(r, fp, 0)
			}
			if cl.base.ReadsA {
				t = max(t, readyOf(d.Ra, cl.base.FPA))
			}
			if cl.base.ReadsB && !d.Lit {
				t = max(t, readyOf(d.Rb, cl.base.FPB))
			}
			if (cl.base.Load || cl.base.Store) && !written[0][d.Rb&63] {
				rec.Addr = uint64(d.Imm) + c.cpu.R[d.Rb&63]
			}
			lat := uint64(cl.lat)
			if t <= kill {
				c.stats.WrongPathIssued++
				if st != nil {
					st.AbortedIssued++
				}
				rec.Issued, rec.Issue, rec.Ready = true, t, t
				if cl.base.Load && !prefetch(d.Op) && !written[0][d.Rb&63] {
					if pa, ok := c.cpu.PhysAddr(uint64(d.Imm) + c.cpu.R[d.Rb&63]); ok && !c.dcache.Access(pa) {
						// Only ProfileMe's record sees the miss: the
						// counters count no wrong-path events.
						rec.Events = rec.Events.With(alpha.EvDMiss)
						lat += uint64(c.p.L2LoadCycles - c.p.LatLoad)
						if !c.l2.Access(pa) {
							rec.Events = rec.Events.With(alpha.EvBMiss)
							lat += uint64(c.p.MemoryCycles)
						}
						// The fill goes on after the squash: a correct-path
						// load of the line merges into it.
						c.addMAF(mafEntry{line: pa / uint64(c.p.LineBytes), done: t + lat})
					}
				}
			}
			if dst, fp := dest(&d, &cl.base); dst {
				r := destReg(&d, &cl.base)
				written[b2i(fp)][r], ready[b2i(fp)][r] = true, t+lat
			}
		}
		// Where the front end goes next: the predictors' say, unchanged.
		next := pc + 4
		stop, redirected := false, true
		switch {
		case cl.base.Branch:
			taken := c.bp.predict(pc).taken
			hist = hist<<1 | uint16(b2i(taken))
			if taken {
				next = pc + 4 + uint64(d.Imm)
			} else {
				redirected = false
			}
		case d.Op == alpha.OpBR:
			next = pc + 4 + uint64(d.Imm)
		case cl.base.Jump:
			t := c.jumpPred[int(pc>>2)&(len(c.jumpPred)-1)] - 1
			if d.Imm>>14&3 >= 2 {
				t, _ = c.ras.peek()
			}
			if t == ^uint64(0) {
				stop = true // nothing predicted: fetch waits
			} else {
				next = t
				rec.Addr = t
			}
		case cl.serial:
			stop = true // PAL calls and invalid instructions stop the front end
		default:
			redirected = false
		}
		rec.Taken = !stop && redirected
		if c.observe != nil {
			c.observe(rec)
		}
		if stop {
			return
		}
		if redirected {
			blk = 0
		}
		pc = next
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
