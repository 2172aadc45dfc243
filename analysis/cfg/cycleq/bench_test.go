package cycleq

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"dcpi/internal/testrand"
)

// cfgLike draws a procedure of n blocks shaped like compiled code: a
// fall-through chain, so every block is reachable, with most branches
// short and forward (if-then-else), some backward (loops), a few far, a few
// early returns, and one block looping on itself.
func cfgLike(r *rand.Rand, n int) Graph {
	g := Graph{N: n, Entry: 0, Exit: n - 1}
	near := func(v, span int) int { return min(n-1, max(0, v+r.IntN(2*span+1)-span)) }
	for v := range n - 1 {
		switch k := r.IntN(20); {
		case k < 6: // conditional forward branch
			g.Edges = append(g.Edges, Edge{v, near(v+8, 8)}, Edge{v, v + 1})
		case k < 9: // loop latch
			g.Edges = append(g.Edges, Edge{v, near(v-10, 10)}, Edge{v, v + 1})
		case k < 10: // far branch
			g.Edges = append(g.Edges, Edge{v, r.IntN(n)}, Edge{v, v + 1})
		case k < 11: // early return, conditional, so every block stays reachable
			g.Edges = append(g.Edges, Edge{v, n - 1}, Edge{v, v + 1})
		default:
			g.Edges = append(g.Edges, Edge{v, v + 1})
		}
	}
	idle := r.IntN(n - 1)
	g.Edges = append(g.Edges, Edge{idle, idle})
	return g
}

// BenchmarkClasses runs Classes on CFG-like procedures of 1,000 to
// 1,000,000 blocks; ns/edge stays flat if the time is linear.
func BenchmarkClasses(b *testing.B) {
	r := testrand.New(b)
	for _, n := range []int{1_000, 10_000, 100_000, 1_000_000} {
		g := cfgLike(r, n)
		b.Run(fmt.Sprintf("blocks=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := Classes(g, Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(g.Edges)), "ns/edge")
		})
	}
}
