package timing

// missFile is the miss address file: the D-cache blocks with a fill
// outstanding and the cycle each fill completes. Fills complete out of
// order (an S-cache hit overtakes a memory access), so it is a small
// unordered array.
type missFile struct {
	block []uint64
	done  []uint64
	n     int
}

func newMissFile(entries int) missFile {
	return missFile{block: make([]uint64, entries), done: make([]uint64, entries)}
}

// advance drops the fills complete by cycle.
func (m *missFile) advance(cycle uint64) {
	for i := 0; i < m.n; {
		if m.done[i] <= cycle {
			m.n--
			m.block[i], m.done[i] = m.block[m.n], m.done[m.n]
			continue
		}
		i++
	}
}

// find returns when the fill of block blk completes, if one is outstanding.
func (m *missFile) find(blk uint64) (done uint64, ok bool) {
	for i := 0; i < m.n; i++ {
		if m.block[i] == blk {
			return m.done[i], true
		}
	}
	return 0, false
}

func (m *missFile) full() bool { return m.n == len(m.block) }

func (m *missFile) add(blk, done uint64) {
	m.block[m.n], m.done[m.n] = blk, done
	m.n++
}

// earliest returns the first cycle an entry frees; the file is not empty.
func (m *missFile) earliest() uint64 {
	e := m.done[0]
	for i := 1; i < m.n; i++ {
		e = min(e, m.done[i])
	}
	return e
}

// drain returns the cycles from cycle until every outstanding fill has
// completed, and empties the file as of then.
func (m *missFile) drain(cycle uint64) (stall uint64) {
	for i := 0; i < m.n; i++ {
		if m.done[i] > cycle {
			stall = max(stall, m.done[i]-cycle)
		}
	}
	m.n = 0
	return stall
}
