package timing

import "testing"

func mustPredictor(t testing.TB, n int) *BranchPredictor {
	t.Helper()
	p, err := NewBranchPredictor(n)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPredictorLoop(t *testing.T) {
	// A loop-closing branch, backward, taken 9 times then falling through,
	// run 3 times. With no history the backward branch is predicted taken;
	// the counter then stays on taken, so only each exit mispredicts.
	p := mustPredictor(t, 2048)
	const pc, top = 0x120001040, 0x120001000
	var miss []int
	for run := range 3 {
		for i := range 10 {
			if p.Resolve(pc, top, i < 9) {
				miss = append(miss, run*10+i)
			}
		}
	}
	if len(miss) != 3 || miss[0] != 9 || miss[1] != 19 || miss[2] != 29 {
		t.Errorf("mispredicted at %v, want the three exits [9 19 29]", miss)
	}
	if s := p.Stats(); s.Branches != 30 || s.Mispredicts != 3 {
		t.Errorf("stats %+v", s)
	}
}

func TestPredictorCounter(t *testing.T) {
	// A forward branch walked through the 2-bit counter's states.
	p := mustPredictor(t, 2048)
	const pc, target = 0x1000, 0x1040
	steps := []struct {
		taken, predicted bool
	}{
		{true, false},  // no history: forward, predicted not taken; now weakly taken
		{true, true},   // strongly taken
		{false, true},  // weakly taken: one not-taken does not flip it
		{true, true},   // strongly taken
		{false, true},  // weakly taken
		{false, true},  // weakly not taken
		{false, false}, // strongly not taken
		{true, false},  // weakly not taken
		{false, false},
	}
	for i, s := range steps {
		if got := p.Predict(pc, target); got != s.predicted {
			t.Fatalf("step %d: predicted %v, want %v", i, got, s.predicted)
		}
		if mis := p.Resolve(pc, target, s.taken); mis != (s.predicted != s.taken) {
			t.Fatalf("step %d: Resolve = %v", i, mis)
		}
	}
	// A branch to itself is backward.
	if !p.Predict(0x2000, 0x2000) {
		t.Error("a branch to itself was predicted forward")
	}
}

func TestPredictorForgetBlock(t *testing.T) {
	p := mustPredictor(t, 2048)
	// Two forward branches trained taken: one in the block at 0x1000, one
	// in the next 32-byte block.
	for range 3 {
		p.Resolve(0x1010, 0x1100, true)
		p.Resolve(0x1024, 0x1100, true)
	}
	p.ForgetBlock(0x101c, 32)
	if p.Predict(0x1010, 0x1100) {
		t.Error("history survived ForgetBlock")
	}
	if !p.Predict(0x1024, 0x1100) {
		t.Error("ForgetBlock reached the next block")
	}
	// 2048 entries of one instruction each alias every 8 KB.
	if !p.Predict(0x1024+8192, 0x1100+8192) {
		t.Error("no aliasing 8 KB apart")
	}
	p.Reset()
	if p.Predict(0x1024, 0x1100) {
		t.Error("history survived Reset")
	}
	if _, err := NewBranchPredictor(1000); err == nil {
		t.Error("1000 entries accepted")
	}
}

func TestReturnStack(t *testing.T) {
	s, err := NewReturnStack(12)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Pop(); ok {
		t.Fatal("pop of an empty stack")
	}
	// 13 nested calls overflow 12 entries: the 12 innermost returns are
	// predicted, the outermost finds the stack empty.
	for i := range uint64(13) {
		s.Push(0x1000 + 4*i)
	}
	if s.Len() != 12 {
		t.Fatalf("Len = %d after 13 pushes", s.Len())
	}
	for i := uint64(12); i >= 1; i-- {
		ret, ok := s.Pop()
		if !ok || ret != 0x1000+4*i {
			t.Fatalf("pop %d = %#x, %v; want %#x", 12-i, ret, ok, 0x1000+4*i)
		}
	}
	if ret, ok := s.Pop(); ok {
		t.Errorf("13th pop = %#x, want empty", ret)
	}
	// Interleaved calls and returns.
	s.Push(1)
	s.Push(2)
	if r, _ := s.Pop(); r != 2 {
		t.Errorf("pop = %d", r)
	}
	s.Push(3)
	if r, _ := s.Pop(); r != 3 {
		t.Errorf("pop = %d", r)
	}
	if r, _ := s.Pop(); r != 1 {
		t.Errorf("pop = %d", r)
	}
	s.Push(9)
	s.Reset()
	if s.Len() != 0 {
		t.Error("Reset left entries")
	}
	if _, err := NewReturnStack(0); err == nil {
		t.Error("depth 0 accepted")
	}
}
