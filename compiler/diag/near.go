package diag

import (
	"cmp"
	"slices"
)

// Closest returns up to n candidates in order of their edit distance to
// s, nearest first (ties keep the candidates' order). Unlike a "did you
// mean" for a typo, it always answers when there are candidates: it is
// for lists the reader must pick from, such as a graph's input names.
func Closest(s string, candidates []string, n int) []string {
	type scored struct {
		name string
		dist int
	}
	var all []scored
	for _, c := range candidates {
		if !slices.ContainsFunc(all, func(x scored) bool { return x.name == c }) {
			all = append(all, scored{c, EditDistance(s, c)})
		}
	}
	slices.SortStableFunc(all, func(a, b scored) int { return cmp.Compare(a.dist, b.dist) })
	var out []string
	for _, x := range all[:min(n, len(all))] {
		out = append(out, x.name)
	}
	return out
}

// Nearest returns the candidate closest to s when it is close enough to be
// a likely typo (an edit distance below len(s)/3+2), else "". Unlike
// Closest it may answer nothing: it is the "did you mean" of a name that
// resolves to nothing.
func Nearest(s string, candidates []string) string {
	best, bestD := "", len(s)/3+2
	for _, c := range candidates {
		if c == s {
			continue
		}
		if dist := EditDistance(s, c); dist < bestD {
			best, bestD = c, dist
		}
	}
	return best
}

// EditDistance is the Levenshtein distance between a and b, in bytes.
// Names longer than 256 bytes are never close to anything.
func EditDistance(a, b string) int {
	if len(a) > 256 || len(b) > 256 {
		return 1 << 30
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
