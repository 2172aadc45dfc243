package storage

import "context"

// ctxEvery is how many rows a scan passes to its callback between looks
// at its context: often enough that a cancelled query stops within
// milliseconds, rarely enough to cost nothing measurable.
const ctxEvery = 1024

// untilDone1 wraps a scan's callback so that the scan stops with ctx's
// error once ctx ends.
func untilDone1[A any](ctx context.Context, fn func(A) error) func(A) error {
	n := 0
	return func(a A) error {
		if n++; n%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		return fn(a)
	}
}

// untilDone4 is untilDone1 for a stack scan's callback.
func untilDone4[A, B, C, D any](ctx context.Context, fn func(A, B, C, D) error) func(A, B, C, D) error {
	n := 0
	return func(a A, b B, c C, d D) error {
		if n++; n%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		return fn(a, b, c, d)
	}
}

// untilDone5 is untilDone1 for a profile scan's callback.
func untilDone5[A, B, C, D, E any](ctx context.Context, fn func(A, B, C, D, E) error) func(A, B, C, D, E) error {
	n := 0
	return func(a A, b B, c C, d D, e E) error {
		if n++; n%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		return fn(a, b, c, d, e)
	}
}
