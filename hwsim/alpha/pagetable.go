package alpha

// pageTable maps virtual page numbers to pages with a three-level radix
// tree of 1024-entry arrays, covering the 21164's 43-bit virtual addresses
// (30-bit page numbers). A lookup is three dependent loads and no hashing,
// which matters on the TLB-miss path of programs that walk large memories.
type pageTable struct {
	root  [1 << radixBits]*ptMid
	count int
}

const (
	radixBits = 10
	radixMask = 1<<radixBits - 1
	// VPNLimit is one past the largest virtual page number.
	VPNLimit = 1 << (3 * radixBits)
)

type ptMid [1 << radixBits]*ptLeaf
type ptLeaf [1 << radixBits]*Page

func (t *pageTable) get(vpn uint64) *Page {
	if vpn >= VPNLimit {
		return nil
	}
	mid := t.root[vpn>>(2*radixBits)]
	if mid == nil {
		return nil
	}
	leaf := mid[vpn>>radixBits&radixMask]
	if leaf == nil {
		return nil
	}
	return leaf[vpn&radixMask]
}

// set installs p (or removes the page if p is nil). vpn must be below
// VPNLimit.
func (t *pageTable) set(vpn uint64, p *Page) {
	mid := t.root[vpn>>(2*radixBits)]
	if mid == nil {
		if p == nil {
			return
		}
		mid = new(ptMid)
		t.root[vpn>>(2*radixBits)] = mid
	}
	leaf := mid[vpn>>radixBits&radixMask]
	if leaf == nil {
		if p == nil {
			return
		}
		leaf = new(ptLeaf)
		mid[vpn>>radixBits&radixMask] = leaf
	}
	old := leaf[vpn&radixMask]
	switch {
	case old == nil && p != nil:
		t.count++
	case old != nil && p == nil:
		t.count--
	}
	leaf[vpn&radixMask] = p
}

// each calls fn for every page in ascending page-number order.
func (t *pageTable) each(fn func(vpn uint64, p *Page)) {
	for i, mid := range t.root {
		if mid == nil {
			continue
		}
		for j, leaf := range mid {
			if leaf == nil {
				continue
			}
			for k, p := range leaf {
				if p != nil {
					fn(uint64(i)<<(2*radixBits)|uint64(j)<<radixBits|uint64(k), p)
				}
			}
		}
	}
}
