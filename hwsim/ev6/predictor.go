package ev6

// tournament is the 21264's conditional branch predictor (HRM §2.1;
// Kessler): a local predictor (a table of per-branch histories indexed by
// PC, whose history indexes saturating counters), a global predictor (2-bit
// counters indexed by the path history of the last branches' outcomes),
// and a choice predictor, indexed by the path history too, that picks
// between them and learns which was right when they disagree.
type tournament struct {
	localHist  []uint16 // per branch (PC bits), LocalHistoryBits of outcomes
	localCtr   []uint8  // indexed by local history
	global     []uint8  // 2-bit, indexed by path history
	choice     []uint8  // 2-bit: >= 2 chooses global
	path       uint32   // the last PathHistoryBits outcomes, newest in bit 0
	histMask   uint16
	pathMask   uint32
	localMax   uint8 // saturation of the local counters
	localTaken uint8 // a local counter at or above this predicts taken
}

func newTournament(p Params) *tournament {
	t := &tournament{
		localHist: make([]uint16, p.LocalHistories),
		localCtr:  make([]uint8, 1<<p.LocalHistoryBits),
		global:    make([]uint8, p.GlobalEntries),
		choice:    make([]uint8, p.ChoiceEntries),
		histMask:  uint16(1<<p.LocalHistoryBits - 1),
		pathMask:  uint32(1<<p.PathHistoryBits - 1),
		localMax:  uint8(1<<p.LocalCounterBits - 1),
	}
	t.localTaken = t.localMax/2 + 1
	return t
}

// prediction is what the predictor said about one branch, kept so that
// the update trains the tables it read.
type prediction struct {
	taken, local, global bool
	hist                 uint16 // the local history read
	path                 uint32 // the path history read
}

func (t *tournament) lhIndex(pc uint64) int { return int(pc>>2) & (len(t.localHist) - 1) }

// predict returns the prediction for the conditional branch at pc, without
// changing the predictor (wrong-path branches are predicted too).
func (t *tournament) predict(pc uint64) prediction {
	h := t.localHist[t.lhIndex(pc)] & t.histMask
	pr := prediction{hist: h, path: t.path}
	pr.local = t.localCtr[h] >= t.localTaken
	pr.global = t.global[int(t.path)&(len(t.global)-1)] >= 2
	if t.choice[int(t.path)&(len(t.choice)-1)] >= 2 {
		pr.taken = pr.global
	} else {
		pr.taken = pr.local
	}
	return pr
}

// update trains the predictor with the branch at pc's outcome, after pr.
func (t *tournament) update(pc uint64, pr prediction, taken bool) {
	if pr.local != pr.global {
		c := &t.choice[int(pr.path)&(len(t.choice)-1)]
		if pr.global == taken {
			*c = min(*c+1, 3)
		} else if *c > 0 {
			*c--
		}
	}
	lc := &t.localCtr[pr.hist]
	g := &t.global[int(pr.path)&(len(t.global)-1)]
	if taken {
		*lc = min(*lc+1, t.localMax)
		*g = min(*g+1, 3)
	} else {
		if *lc > 0 {
			*lc--
		}
		if *g > 0 {
			*g--
		}
	}
	bit := uint16(0)
	if taken {
		bit = 1
	}
	i := t.lhIndex(pc)
	t.localHist[i] = (t.localHist[i]<<1 | bit) & t.histMask
	t.path = (t.path<<1 | uint32(bit)) & t.pathMask
}

// returnStack predicts returns: calls push, returns pop; it wraps when
// full, losing the oldest, as a circular stack does.
type returnStack struct {
	a   []uint64
	top int // index of the next push
	n   int
}

func (s *returnStack) push(ret uint64) {
	s.a[s.top] = ret
	s.top = (s.top + 1) % len(s.a)
	s.n = min(s.n+1, len(s.a))
}

func (s *returnStack) peek() (uint64, bool) {
	if s.n == 0 {
		return 0, false
	}
	return s.a[(s.top-1+len(s.a))%len(s.a)], true
}

func (s *returnStack) pop() (uint64, bool) {
	r, ok := s.peek()
	if ok {
		s.top = (s.top - 1 + len(s.a)) % len(s.a)
		s.n--
	}
	return r, ok
}
