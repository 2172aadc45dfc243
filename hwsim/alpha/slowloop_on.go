//go:build speedguard_slow

package alpha

// slowLoop: see slowloop.go.
const slowLoop = true

//go:noinline
func slowNop() {}
