/*
 * sort - three comparison sorts over the same pseudo-random 32-bit keys:
 * quicksort (median of three, insertion sort for short runs, recursion on the
 * smaller side), top-down mergesort with a scratch buffer, and heapsort.
 * Unpredictable compare branches, recursion, and sequential plus random
 * memory traffic. Each result is checked for order and against the others.
 *
 * usage: sort [keys]   (default 25000)
 */
#include <string.h>

#include "wl.h"

WL_NOINLINE
static void insertion(uint32_t *a, int64_t lo, int64_t hi)
{
	for (int64_t i = lo + 1; i <= hi; i++) {
		uint32_t v = a[i];
		int64_t j = i - 1;
		while (j >= lo && a[j] > v) {
			a[j + 1] = a[j];
			j--;
		}
		a[j + 1] = v;
	}
}

static inline void swap(uint32_t *a, int64_t i, int64_t j)
{
	uint32_t t = a[i];
	a[i] = a[j];
	a[j] = t;
}

WL_NOINLINE
static void quick(uint32_t *a, int64_t lo, int64_t hi)
{
	while (hi - lo > 16) {
		int64_t mid = lo + (hi - lo) / 2;
		if (a[mid] < a[lo])
			swap(a, mid, lo);
		if (a[hi] < a[lo])
			swap(a, hi, lo);
		if (a[hi] < a[mid])
			swap(a, hi, mid);
		uint32_t pivot = a[mid];
		int64_t i = lo, j = hi;
		while (i <= j) {
			while (a[i] < pivot)
				i++;
			while (a[j] > pivot)
				j--;
			if (i <= j) {
				swap(a, i, j);
				i++;
				j--;
			}
		}
		/* Recurse on the smaller part to bound the stack. */
		if (j - lo < hi - i) {
			quick(a, lo, j);
			lo = i;
		} else {
			quick(a, i, hi);
			hi = j;
		}
	}
	insertion(a, lo, hi);
}

WL_NOINLINE
static void merge_rec(uint32_t *a, uint32_t *tmp, uint64_t lo, uint64_t hi)
{
	if (hi - lo < 2)
		return;
	uint64_t mid = lo + (hi - lo) / 2;
	merge_rec(a, tmp, lo, mid);
	merge_rec(a, tmp, mid, hi);
	uint64_t i = lo, j = mid, k = lo;
	while (i < mid && j < hi)
		tmp[k++] = a[j] < a[i] ? a[j++] : a[i++];
	while (i < mid)
		tmp[k++] = a[i++];
	while (j < hi)
		tmp[k++] = a[j++];
	memcpy(a + lo, tmp + lo, (hi - lo) * sizeof *a);
}

static void sift(uint32_t *a, uint64_t root, uint64_t n)
{
	for (;;) {
		uint64_t child = 2 * root + 1;
		if (child >= n)
			return;
		if (child + 1 < n && a[child + 1] > a[child])
			child++;
		if (a[root] >= a[child])
			return;
		uint32_t t = a[root];
		a[root] = a[child];
		a[child] = t;
		root = child;
	}
}

WL_NOINLINE
static void heap(uint32_t *a, uint64_t n)
{
	for (uint64_t i = n / 2; i-- > 0;)
		sift(a, i, n);
	for (uint64_t end = n; end-- > 1;) {
		uint32_t t = a[0];
		a[0] = a[end];
		a[end] = t;
		sift(a, 0, end);
	}
}

WL_NOINLINE
static uint64_t unsorted(const uint32_t *a, uint64_t n)
{
	uint64_t bad = 0;
	for (uint64_t i = 1; i < n; i++)
		bad += a[i - 1] > a[i];
	return bad;
}

int main(int argc, char **argv)
{
	uint64_t n = wl_arg(argc, argv, 1, 25000, 1ULL << 26);
	uint32_t *orig = wl_xmalloc(n * sizeof *orig);
	uint32_t *q = wl_xmalloc(n * sizeof *q);
	uint32_t *m = wl_xmalloc(n * sizeof *m);
	uint32_t *hp = wl_xmalloc(n * sizeof *hp);
	uint32_t *tmp = wl_xmalloc(n * sizeof *tmp);
	uint64_t h = WL_SEED0, keysum = 0;
	wl_rng r;

	wl_seed(&r, 7);
	for (uint64_t i = 0; i < n; i++) {
		/* Some duplicates: one key in eight comes from a small range. */
		orig[i] = (i & 7) == 0 ? wl_below(&r, 1000) : wl_next32(&r);
		keysum += orig[i];
	}
	memcpy(q, orig, n * sizeof *q);
	memcpy(m, orig, n * sizeof *m);
	memcpy(hp, orig, n * sizeof *hp);

	quick(q, 0, (int64_t)n - 1);
	merge_rec(m, tmp, 0, n);
	heap(hp, n);

	uint64_t bq = unsorted(q, n), bm = unsorted(m, n), bh = unsorted(hp, n);
	int same = memcmp(q, m, n * sizeof *q) == 0 &&
		   memcmp(q, hp, n * sizeof *q) == 0;
	for (uint64_t i = 0; i < n; i++)
		h = wl_mix(h, q[i]);

	printf("sort: %" PRIu64 " keys, key sum %" PRIu64 "\n", n, keysum);
	printf("out of order: quick %" PRIu64 " merge %" PRIu64 " heap %" PRIu64
	       "\n", bq, bm, bh);
	printf("results agree: %s\n", same ? "yes" : "NO");
	printf("min %" PRIu32 " median %" PRIu32 " max %" PRIu32 "\n", q[0],
	       q[n / 2], q[n - 1]);
	wl_checksum("sort", h);
	free(orig);
	free(q);
	free(m);
	free(hp);
	free(tmp);
	return 0;
}
