package timing

import "fmt"

// BranchStats counts resolved branches and the mispredicted among them.
type BranchStats struct {
	Branches, Mispredicts uint64
}

// BranchPredictor is a table of 2-bit saturating counters indexed by the
// instruction address (PC<n+1:2> for 2^n entries), predicting conditional
// branches. An entry may have no history: after Reset, or after
// ForgetBlock when its I-cache line was refilled. A branch without history
// is predicted by its direction, backward taken and forward not taken, and
// its counter then starts from the weak state of that guess. This is the
// same as initializing the history from the sign of the displacement when
// the line is filled, as the 21064 did; for the 21164 the static rule is an
// assumption (ALPHA-NOTES: the predictor's design was not found).
type BranchPredictor struct {
	// ctr is 0 for no history, else the counter state plus one: 1 strongly
	// not taken, 2 weakly not taken, 3 weakly taken, 4 strongly taken.
	ctr   []uint8
	mask  uint64
	stats BranchStats
}

// NewBranchPredictor returns a predictor of entries counters, a power of
// two, all without history.
func NewBranchPredictor(entries int) (*BranchPredictor, error) {
	if !isPow2(entries) {
		return nil, fmt.Errorf("%w: branch predictor of %d entries: want a power of two", ErrInvalidParams, entries)
	}
	return &BranchPredictor{ctr: make([]uint8, entries), mask: uint64(entries - 1)}, nil
}

// Stats returns the branch and misprediction counts of Resolve.
func (p *BranchPredictor) Stats() BranchStats { return p.stats }

func (p *BranchPredictor) index(pc uint64) uint64 { return pc >> 2 & p.mask }

// backward reports whether a branch at pc to target goes backward: a
// displacement of -1 or less, so a branch to itself is backward.
func backward(pc, target uint64) bool { return target <= pc }

// Predict returns whether the conditional branch at pc, whose taken target
// is target, is predicted taken.
func (p *BranchPredictor) Predict(pc, target uint64) bool {
	v := p.ctr[p.index(pc)]
	if v == 0 {
		return backward(pc, target)
	}
	return v >= 3
}

// Update trains the counter of the branch at pc with its outcome.
func (p *BranchPredictor) Update(pc, target uint64, taken bool) {
	i := p.index(pc)
	v := p.ctr[i]
	if v == 0 {
		v = 2
		if backward(pc, target) {
			v = 3
		}
	}
	if taken {
		if v < 4 {
			v++
		}
	} else if v > 1 {
		v--
	}
	p.ctr[i] = v
}

// Resolve predicts the branch, trains the predictor with the outcome and
// reports whether the prediction was wrong.
func (p *BranchPredictor) Resolve(pc, target uint64, taken bool) (mispredicted bool) {
	predicted := p.Predict(pc, target)
	p.Update(pc, target, taken)
	p.stats.Branches++
	if predicted != taken {
		p.stats.Mispredicts++
		return true
	}
	return false
}

// ForgetBlock drops the history of every instruction in the size-byte
// aligned block holding pc, as an I-cache fill does to history kept in the
// I-cache. size is a power of two.
func (p *BranchPredictor) ForgetBlock(pc uint64, size int) {
	first := pc &^ uint64(size-1)
	for a := first; a < first+uint64(size); a += 4 {
		p.ctr[p.index(a)] = 0
	}
}

// Reset drops all history.
func (p *BranchPredictor) Reset() { clear(p.ctr) }

// ReturnStack predicts the targets of returns: JSR and BSR push their
// return address, RET pops it, JSR_COROUTINE pops and then pushes. It is
// circular: a push onto a full stack overwrites the oldest entry, so after
// more calls than its depth the outermost returns find it empty and are
// mispredicted.
type ReturnStack struct {
	addr []uint64
	top  int // the slot the next push writes
	n    int // valid entries
}

// NewReturnStack returns an empty stack of depth entries.
func NewReturnStack(depth int) (*ReturnStack, error) {
	if depth < 1 {
		return nil, fmt.Errorf("%w: return stack of depth %d: want at least 1", ErrInvalidParams, depth)
	}
	return &ReturnStack{addr: make([]uint64, depth)}, nil
}

// Push records a return address.
func (s *ReturnStack) Push(ret uint64) {
	s.addr[s.top] = ret
	s.top++
	if s.top == len(s.addr) {
		s.top = 0
	}
	if s.n < len(s.addr) {
		s.n++
	}
}

// Pop returns the predicted return address, or false if the stack is
// empty.
func (s *ReturnStack) Pop() (ret uint64, ok bool) {
	if s.n == 0 {
		return 0, false
	}
	s.n--
	if s.top == 0 {
		s.top = len(s.addr)
	}
	s.top--
	return s.addr[s.top], true
}

// Len returns the number of entries on the stack.
func (s *ReturnStack) Len() int { return s.n }

// Reset empties the stack.
func (s *ReturnStack) Reset() { s.top, s.n = 0, 0 }
