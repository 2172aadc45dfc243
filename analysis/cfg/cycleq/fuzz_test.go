package cycleq

import (
	"errors"
	"testing"
)

// decodeGraph reads a small graph from fuzz bytes: nodes (low 4 bits,
// 0-15; the high bit selects MissingEdges), entry, exit, then an edge per
// pair of bytes. Each end is a byte mod 14, less one, so out-of-range ends
// (-1, N..12) occur as often as bad input deserves.
func decodeGraph(data []byte) (Graph, Options, bool) {
	if len(data) < 3 {
		return Graph{}, Options{}, false
	}
	end := func(b byte) int { return int(b%14) - 1 }
	g := Graph{N: int(data[0] & 0x0f), Entry: end(data[1]), Exit: end(data[2])}
	opt := Options{MissingEdges: data[0]&0x80 != 0}
	for rest := data[3:]; len(rest) >= 2 && len(g.Edges) < 40; rest = rest[2:] {
		g.Edges = append(g.Edges, Edge{end(rest[0]), end(rest[1])})
	}
	return g, opt, true
}

// encodeGraph is decodeGraph's inverse for well-formed graphs of at most
// 12 nodes, to seed the corpus with the known shapes.
func encodeGraph(g Graph) []byte {
	b := []byte{byte(g.N), byte(g.Entry + 1), byte(g.Exit + 1)}
	for _, e := range g.Edges {
		b = append(b, byte(e.From+1), byte(e.To+1))
	}
	return b
}

// FuzzClasses checks, for any graph the bytes describe, that Classes never
// panics, rejects exactly the malformed graphs with ErrBadGraph, and
// agrees with the brute-force model (or gives singletons when edges are
// missing).
func FuzzClasses(f *testing.F) {
	for _, g := range []Graph{
		{N: 4, Entry: 0, Exit: 3, Edges: []Edge{{0, 1}, {0, 2}, {1, 3}, {2, 3}}},
		{N: 6, Entry: 0, Exit: 5, Edges: []Edge{{0, 1}, {1, 2}, {2, 3}, {3, 2}, {2, 4}, {4, 1}, {1, 5}}},
		{N: 4, Entry: 0, Exit: 3, Edges: []Edge{{0, 1}, {1, 2}, {2, 1}, {0, 3}}},
		{N: 3, Entry: 0, Exit: 2, Edges: []Edge{{0, 1}, {1, 0}}},
		{N: 3, Entry: 0, Exit: 2, Edges: []Edge{{0, 1}, {1, 1}, {1, 2}, {0, 1}}},
	} {
		f.Add(encodeGraph(g))
	}
	f.Add([]byte{0x84, 1, 4, 1, 2, 2, 4})
	f.Add([]byte{0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		g, opt, ok := decodeGraph(data)
		if !ok {
			return
		}
		if !opt.MissingEdges {
			checkAgainstOracle(t, g)
			return
		}
		p, err := Classes(g, opt)
		if !oracleValid(g) {
			if !errors.Is(err, ErrBadGraph) {
				t.Fatalf("graph %+v is malformed, but Classes said %v", g, err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		checkNumbering(t, g, p)
		if p.Count != g.N+len(g.Edges)+1 {
			t.Fatalf("missing edges: %d classes for %d blocks and %d edges", p.Count, g.N, len(g.Edges))
		}
	})
}
