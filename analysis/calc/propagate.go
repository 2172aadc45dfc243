package calc

// Local propagation (sec. 6.1.4): a block's frequency equals the sum of its
// incoming edges' and the sum of its outgoing edges'. Each such equation is
// a constraint over classes; when all but one of its classes are known, the
// last one is solved for, given to its whole class at once, and clamped at
// zero (the equations can go negative because the known values are only
// estimates). Every constraint counts its unknown classes, and a class
// becoming known visits only the constraints it appears in, so the whole
// runs in time linear in the size of the CFG and stops at the fixpoint: no
// constraint with exactly one unknown class left.

// term is one class in a constraint and its coefficient: the constraint
// says Σ coef·F(class) = 0.
type term struct {
	class int
	coef  float64
}

// constraints returns the flow constraints of p's CFG with the edges the
// partition added (exit→entry, and header→exit of each infinite loop), by
// which Entry and Exit balance like blocks. The constraints that could be
// false are left out: a node without in-edges (or out-edges) has no
// in-constraint (out-constraint), and when the CFG is missing edges no
// in-constraint holds (any block may be an unresolved jump's target) nor
// the out-constraint of a block ending in an unresolved jump.
func constraints(p *Procedure) [][]term {
	g := p.CFG
	n := g.NumNodes()
	in := make([][]int, n)  // classes of the edges into each node
	out := make([][]int, n) // and out of it
	for i, e := range g.Edges {
		c := p.Classes.Edge[i]
		in[e.To] = append(in[e.To], c)
		out[e.From] = append(out[e.From], c)
	}
	for _, a := range p.Classes.Added {
		if a.From >= 0 && a.From < n && a.To >= 0 && a.To < n {
			in[a.To] = append(in[a.To], a.Class)
			out[a.From] = append(out[a.From], a.Class)
		}
	}
	unresolved := make([]bool, n)
	for _, j := range g.Jumps {
		if !j.Resolved && j.Block >= 0 && j.Block < len(g.Blocks) && g.Blocks[j.Block].End == j.PC+4 {
			unresolved[j.Block] = true
		}
	}
	var cs [][]term
	add := func(node int, edges []int) {
		if len(edges) == 0 {
			return
		}
		// Merge the terms of one class: a block and its only out-edge are
		// often one class, and then the constraint says nothing.
		ts := []term{{p.Classes.Node[node], 1}}
		for _, c := range edges {
			found := false
			for k := range ts {
				if ts[k].class == c {
					ts[k].coef--
					found = true
					break
				}
			}
			if !found {
				ts = append(ts, term{c, -1})
			}
		}
		kept := ts[:0]
		for _, t := range ts {
			if t.coef != 0 {
				kept = append(kept, t)
			}
		}
		if len(kept) > 0 {
			cs = append(cs, kept)
		}
	}
	for v := range n {
		if !g.MissingEdges {
			add(v, in[v])
		}
		if !unresolved[v] {
			add(v, out[v])
		}
	}
	return cs
}

// propagate fills in the classes of f still unknown from the flow
// constraints.
func propagate(p *Procedure, f *Frequencies) {
	cs := constraints(p)
	unknown := make([]int, len(cs))
	uses := make([][]int, len(f.Class)) // constraints each class appears in
	var work []int
	for i, ts := range cs {
		for _, t := range ts {
			uses[t.class] = append(uses[t.class], i)
			if !f.Class[t.class].Known() {
				unknown[i]++
			}
		}
		if unknown[i] == 1 {
			work = append(work, i)
		}
	}
	for len(work) > 0 {
		i := work[len(work)-1]
		work = work[:len(work)-1]
		if unknown[i] != 1 {
			continue
		}
		var sum, largest, coef float64
		u := -1
		conf := High
		for _, t := range cs[i] {
			e := &f.Class[t.class]
			if !e.Known() {
				u, coef = t.class, t.coef
				continue
			}
			sum += t.coef * e.F
			largest = max(largest, e.F)
			conf = min(conf, e.Confidence)
		}
		v := max(-sum/coef, 0)
		e := &f.Class[u]
		e.F, e.Method = v, Propagated
		e.Confidence = Low
		switch {
		case conf == High && v >= largest/4:
			e.Confidence = Medium
		case conf < High:
			e.Reason = "propagated (sec. 6.1.4) from estimates of low or medium confidence"
		default:
			e.Reason = "propagated as a small difference of larger estimates"
		}
		for _, j := range uses[u] {
			unknown[j]--
			if unknown[j] == 1 {
				work = append(work, j)
			}
		}
	}
}
