/*
 * stream - memory bandwidth kernels in the manner of McCalpin's STREAM:
 * copy, scale, add, triad (a saxpy) and a sum reduction over three arrays of
 * doubles. At the default size each array is 4 MB (12 MB in all), more than a
 * 4 MB board cache, so every pass streams from memory.
 *
 * usage: stream [elements-per-array [passes]]   (defaults 524288, 1)
 *
 * The scalars (3 and 0.25) keep every value a small integer: every operation
 * is exact, a pass turns a into exactly 4a (checked at the end), a rescale
 * between passes restores it, and the output is the same on any IEEE machine.
 */
#include "wl.h"

WL_NOINLINE
static void copy(double *restrict c, const double *restrict a, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		c[i] = a[i];
}

WL_NOINLINE
static void scale(double *restrict b, const double *restrict c, double s,
		  uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		b[i] = s * c[i];
}

WL_NOINLINE
static void add(double *restrict c, const double *restrict a,
		const double *restrict b, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		c[i] = a[i] + b[i];
}

WL_NOINLINE
static void triad(double *restrict a, const double *restrict b,
		  const double *restrict c, double s, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		a[i] = b[i] + s * c[i];
}

WL_NOINLINE
static double sum(const double *a, uint64_t n)
{
	double s0 = 0, s1 = 0;
	uint64_t i;

	for (i = 0; i + 1 < n; i += 2) {
		s0 += a[i];
		s1 += a[i + 1];
	}
	if (i < n)
		s0 += a[i];
	return s0 + s1;
}

/* rescale keeps the values the same from pass to pass: with scalars 3 and
 * 0.25 the kernels turn a into 4a (b = 3a, c = 4a, a = 3a + a), and a
 * quarter of that is exact. */
WL_NOINLINE
static void rescale(double *a, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		a[i] = a[i] * 0.25;
}

/* initial holds a's starting values, 1..16 repeating: a table because the
 * 21164 has no direct integer-to-FP register move (cvtqt goes via memory). */
static const double initial[16] = {1, 2,  3,  4,  5,  6,  7,  8,
				   9, 10, 11, 12, 13, 14, 15, 16};

/* check counts the elements of a that differ from 4 times their initial
 * value, which is what a pass leaves before the rescale. */
WL_NOINLINE
static uint64_t check(const double *a, uint64_t n)
{
	uint64_t bad = 0;

	for (uint64_t i = 0; i < n; i++)
		bad += a[i] != 4.0 * initial[i & 15];
	return bad;
}

int main(int argc, char **argv)
{
	uint64_t n = wl_arg(argc, argv, 1, 524288, 1ULL << 26);
	uint64_t passes = wl_arg(argc, argv, 2, 1, 1000);
	double *a = wl_xmalloc(n * sizeof *a);
	double *b = wl_xmalloc(n * sizeof *b);
	double *c = wl_xmalloc(n * sizeof *c);
	uint64_t h = WL_SEED0;
	double sa = 0;
	uint64_t bad;

	for (uint64_t i = 0; i < n; i++) {
		a[i] = initial[i & 15];
		b[i] = 2.0;
		c[i] = 0.0;
	}
	for (uint64_t p = 0; p < passes; p++) {
		copy(c, a, n);
		scale(b, c, 3.0, n);
		add(c, a, b, n);
		triad(a, b, c, 0.25, n);
		sa = sum(a, n);
		/* Sums of integers well below 2^53: exact. */
		h = wl_mix(h, (uint64_t)sa);
		if (p + 1 < passes)
			rescale(a, n);
	}
	printf("stream: %" PRIu64 " doubles per array (%" PRIu64
	       " KB), %" PRIu64 " passes\n", n, n * 8 / 1024, passes);
	printf("sum a %.1f\nb[1] %.1f c[1] %.1f\n", sa, b[1], c[1]);
	bad = check(a, n);
	printf("verify: %" PRIu64 " elements wrong\n", bad);
	h = wl_mix(h, bad);
	wl_checksum("stream", h);
	free(a);
	free(b);
	free(c);
	return 0;
}
