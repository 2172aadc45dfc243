/*
 * matmul - dense double-precision matrix multiply, three ways: the naive
 * i-j-k triple loop (strided column walk of B, so D-cache and TLB misses), an
 * i-k-j loop over a transposed-friendly order, and a cache-blocked version.
 *
 * usage: matmul [n]   (default 88: three 88x88 matrices, 61 KB each;
 *                     not a multiple of the block size, so edge blocks run)
 *
 * Entries are small multiples of 1/4, so every product and partial sum is
 * exact and all three methods must agree bit for bit (checked).
 */
#include <string.h>

#include "wl.h"

#define BLOCK 16

WL_NOINLINE
static void fill(double *m, uint64_t n, uint64_t salt)
{
	for (uint64_t i = 0; i < n; i++)
		for (uint64_t j = 0; j < n; j++)
			m[i * n + j] =
			    (double)((int64_t)((i * 7 + j * 3 + salt) % 17) - 8) /
			    4.0;
}

WL_NOINLINE
static void naive(double *c, const double *a, const double *b, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		for (uint64_t j = 0; j < n; j++) {
			double s = 0;
			for (uint64_t k = 0; k < n; k++)
				s += a[i * n + k] * b[k * n + j];
			c[i * n + j] = s;
		}
}

WL_NOINLINE
static void ikj(double *c, const double *a, const double *b, uint64_t n)
{
	memset(c, 0, n * n * sizeof *c);
	for (uint64_t i = 0; i < n; i++)
		for (uint64_t k = 0; k < n; k++) {
			double aik = a[i * n + k];
			double *ci = c + i * n;
			const double *bk = b + k * n;
			for (uint64_t j = 0; j < n; j++)
				ci[j] += aik * bk[j];
		}
}

WL_NOINLINE
static void blocked(double *c, const double *a, const double *b, uint64_t n)
{
	memset(c, 0, n * n * sizeof *c);
	for (uint64_t ii = 0; ii < n; ii += BLOCK)
		for (uint64_t kk = 0; kk < n; kk += BLOCK)
			for (uint64_t jj = 0; jj < n; jj += BLOCK) {
				uint64_t ie = ii + BLOCK < n ? ii + BLOCK : n;
				uint64_t ke = kk + BLOCK < n ? kk + BLOCK : n;
				uint64_t je = jj + BLOCK < n ? jj + BLOCK : n;
				for (uint64_t i = ii; i < ie; i++)
					for (uint64_t k = kk; k < ke; k++) {
						double aik = a[i * n + k];
						for (uint64_t j = jj; j < je; j++)
							c[i * n + j] +=
							    aik * b[k * n + j];
					}
			}
}

WL_NOINLINE
static uint64_t digest(const double *c, uint64_t n, double *trace)
{
	uint64_t h = WL_SEED0;
	double t = 0;

	for (uint64_t i = 0; i < n * n; i++)
		/* multiples of 1/16, |c| < 16 n: exact as int64. */
		h = wl_mix(h, (uint64_t)(int64_t)(c[i] * 16.0));
	for (uint64_t i = 0; i < n; i++)
		t += c[i * n + i];
	*trace = t;
	return h;
}

int main(int argc, char **argv)
{
	uint64_t n = wl_arg(argc, argv, 1, 88, 4096);
	double *a = wl_xmalloc(n * n * sizeof *a);
	double *b = wl_xmalloc(n * n * sizeof *b);
	double *c = wl_xmalloc(n * n * sizeof *c);
	uint64_t h1, h2, h3;
	double t1, t2, t3;

	fill(a, n, 1);
	fill(b, n, 5);
	naive(c, a, b, n);
	h1 = digest(c, n, &t1);
	ikj(c, a, b, n);
	h2 = digest(c, n, &t2);
	blocked(c, a, b, n);
	h3 = digest(c, n, &t3);

	printf("matmul: %" PRIu64 "x%" PRIu64 " doubles, block %d\n", n, n,
	       BLOCK);
	printf("trace naive %.4f ikj %.4f blocked %.4f\n", t1, t2, t3);
	printf("c[0][0] %.4f c[n-1][n-1] %.4f\n", c[0], c[n * n - 1]);
	printf("methods agree: %s\n", h1 == h2 && h2 == h3 ? "yes" : "NO");
	wl_checksum("matmul", wl_mix(wl_mix(h1, h2), h3));
	free(a);
	free(b);
	free(c);
	return 0;
}
