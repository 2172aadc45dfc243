// Package editdist is the Levenshtein distance the tools' "did you mean"
// suggestions rank names by (dcpi's flags and commands, dcpicalc's
// procedure names).
package editdist

// Distance is the Levenshtein distance between a and b, in edits
// (insertions, deletions, substitutions of a byte).
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, sub)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
