/*
 * wl.h - helpers shared by the dcpi workloads.
 *
 * Everything here is deterministic and free of undefined behaviour so that a
 * program prints byte-identical output on Alpha (under the simulator or
 * qemu-alpha) and on the host: unsigned arithmetic for hashing and random
 * numbers, explicit-width types, no pointers or times in the output.
 */
#ifndef WL_H
#define WL_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* WL_NOINLINE keeps a hot kernel in its own procedure, so that a profile's
 * per-procedure view names it instead of folding it into main. */
#define WL_NOINLINE __attribute__((noinline))

/* wl_rng is a 64-bit linear congruential generator (Knuth's MMIX constants).
 * The high bits are the good ones, so wl_next32 returns bits 63..32. */
typedef struct {
	uint64_t s;
} wl_rng;

static inline void wl_seed(wl_rng *r, uint64_t seed)
{
	r->s = seed ^ 0x9e3779b97f4a7c15ULL;
}

static inline uint32_t wl_next32(wl_rng *r)
{
	r->s = r->s * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)(r->s >> 32);
}

static inline uint64_t wl_next64(wl_rng *r)
{
	uint64_t hi = wl_next32(r);
	return (hi << 32) | wl_next32(r);
}

/* wl_below returns a value in [0, n) without a division: the 21164 has no
 * integer divider, and a multiply-high keeps set-up loops cheap. */
static inline uint32_t wl_below(wl_rng *r, uint32_t n)
{
	return (uint32_t)(((uint64_t)wl_next32(r) * n) >> 32);
}

/* wl_mix folds a value into a running checksum (a 64-bit FNV-1a variant that
 * takes 8 bytes at a time, then a final avalanche in wl_final). */
static inline uint64_t wl_mix(uint64_t h, uint64_t v)
{
	h ^= v;
	h *= 0x100000001b3ULL;
	h ^= h >> 29;
	return h;
}

static inline uint64_t wl_final(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

#define WL_SEED0 0xcbf29ce484222325ULL

/* wl_arg parses argv[i] as a positive decimal size, or returns def when the
 * argument is absent. Bad input is reported on stderr with exit status 2. */
static inline uint64_t wl_arg(int argc, char **argv, int i, uint64_t def,
			      uint64_t max)
{
	char *end;
	unsigned long long v;

	if (argc <= i)
		return def;
	v = strtoull(argv[i], &end, 10);
	if (end == argv[i] || *end != '\0' || v == 0 || v > max) {
		fprintf(stderr, "%s: argument %d: want an integer in 1..%" PRIu64
			", got \"%s\"\n", argv[0], i, max, argv[i]);
		exit(2);
	}
	return v;
}

/* wl_checksum prints the line every workload ends with. */
static inline void wl_checksum(const char *name, uint64_t h)
{
	printf("%s checksum %016" PRIx64 "\n", name, wl_final(h));
}

/* wl_xmalloc is malloc that exits cleanly on failure. */
static inline void *wl_xmalloc(size_t n)
{
	void *p = malloc(n);
	if (p == NULL) {
		fprintf(stderr, "out of memory (%zu bytes)\n", n);
		exit(3);
	}
	return p;
}

#endif
