package cct

// Stats are the paper's Table 3 figures for one tree.
type Stats struct {
	// Size is the bytes the paper's records would take (RecordLayout).
	Size        uint64  `json:"size"`
	Nodes       int     `json:"nodes"`         // records, the root excluded
	AvgNodeSize float64 `json:"avg_node_size"` // Size / Nodes
	// AvgOutDegree is the mean, over records with any, of the distinct
	// callees a record reaches: tree children plus recursive backedges.
	AvgOutDegree float64 `json:"avg_out_degree"`
	// HeightAvg and HeightMax are the depths of the leaves (a root's child
	// has depth 1).
	HeightAvg float64 `json:"height_avg"`
	HeightMax int     `json:"height_max"`
	// MaxReplication is the most records of one procedure, MaxReplicated
	// that procedure's entry address.
	MaxReplication int    `json:"max_replication"`
	MaxReplicated  uint64 `json:"max_replicated"`
	// CallSitesAll are the call sites of the records' procedures (as
	// Layout.CallSites says, else the call sites seen used), CallSitesUsed
	// those with a callee recorded, CallSitesOnePath those used reached by
	// exactly one of the procedure's paths run in that context (needs
	// Layout.PathReaches; otherwise 0).
	CallSitesAll     int `json:"call_sites_all"`
	CallSitesUsed    int `json:"call_sites_used"`
	CallSitesOnePath int `json:"call_sites_one_path"`
}

// Layout describes the records whose size Stats computes and what the tree
// itself does not know about the procedures.
//
// The record layout assumed is the paper's Figure 6 on a 32-bit machine,
// with 64-bit metric accumulators (sec. 3.3): a 4-byte ID, a 4-byte parent
// pointer, 8 bytes per metric, a 4-byte callee slot per call site of the
// procedure, and per call site with more than one callee (an indirect
// call's list) 8 bytes per list element (a 4-byte record pointer and a
// 4-byte next). A record's path counts, when present, take 16 bytes per
// path run (a hash table entry of path ID and count), as the paper's
// hashed counters for procedures with many paths.
type Layout struct {
	// CallSites returns how many call sites the procedure at proc has;
	// nil or a negative answer: count the call sites seen used.
	CallSites func(proc uint64) int
	// PathReaches reports whether path id of the procedure at proc runs
	// through the call at callSite; nil leaves CallSitesOnePath at 0.
	PathReaches func(proc, id, callSite uint64) bool
}

// Record sizes of the assumed layout, in bytes.
const (
	recordHeader = 4 + 4 // ID, parent
	metricBytes  = 8
	slotBytes    = 4
	listElem     = 8
	pathEntry    = 16
)

// Stats measures t.
func (t *Tree) Stats(l Layout) Stats {
	var s Stats
	perProc := map[uint64]int{}
	var leaves, leafDepths, withOut, outs int
	t.Walk(func(n *Node) {
		// Callees per call site: children and backedges.
		callees := map[uint64]int{}
		for _, c := range n.Children {
			callees[c.CallSite]++
		}
		for _, b := range n.Recursive {
			callees[b.CallSite]++
		}
		sites := len(callees)
		if l.CallSites != nil && n != t.Root {
			if k := l.CallSites(n.Proc); k >= 0 {
				sites = max(k, len(callees))
			}
		}
		size := uint64(recordHeader + metricBytes*len(n.Metrics) + slotBytes*sites)
		for _, k := range callees {
			if k > 1 {
				size += uint64(listElem * k)
			}
		}
		size += uint64(pathEntry * len(n.Paths))
		s.Size += size
		if n == t.Root {
			return
		}
		s.Nodes++
		perProc[n.Proc]++
		if d := len(n.Children) + len(n.Recursive); d > 0 {
			withOut++
			outs += d
		}
		if len(n.Children) == 0 {
			leaves++
			leafDepths += n.depth
			s.HeightMax = max(s.HeightMax, n.depth)
		}
		s.CallSitesAll += sites
		s.CallSitesUsed += len(callees)
		if l.PathReaches != nil {
			for site := range callees {
				reaching := 0
				for id, c := range n.Paths {
					if c > 0 && l.PathReaches(n.Proc, id, site) {
						reaching++
					}
				}
				if reaching == 1 {
					s.CallSitesOnePath++
				}
			}
		}
	})
	if s.Nodes > 0 {
		s.AvgNodeSize = float64(s.Size) / float64(s.Nodes)
	}
	if withOut > 0 {
		s.AvgOutDegree = float64(outs) / float64(withOut)
	}
	if leaves > 0 {
		s.HeightAvg = float64(leafDepths) / float64(leaves)
	}
	for p, k := range perProc {
		if k > s.MaxReplication || k == s.MaxReplication && p < s.MaxReplicated {
			s.MaxReplication, s.MaxReplicated = k, p
		}
	}
	return s
}
