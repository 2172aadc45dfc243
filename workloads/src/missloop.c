/*
 * missloop - the ProfileMe paper's Figure 2 loop: one load per iteration
 * that misses the D-cache (a dependent walk around a randomly permuted ring
 * of cache lines), followed by 192 nops that depend on nothing. A counter
 * sampling the load's D-cache misses is interrupted some cycles after each
 * overflow, at whichever instruction is then due: its samples land on the
 * nops after the load. ProfileMe puts them on the load. The ring is 1 MB:
 * every load misses the 64 KB D-cache of the 21264 (and the 8 KB one of
 * the 21164) and hits a board cache of 2 MB or more.
 *
 * usage: missloop [lines [steps]]   (defaults 16384, 60000)
 */
#include "wl.h"

struct line {
	struct line *next;
	uint64_t pad[7]; /* one 64-byte 21264 cache line per node */
};

#define NOP4 "bis $31,$31,$31\n\tbis $31,$31,$31\n\tbis $31,$31,$31\n\tbis $31,$31,$31\n\t"
#define NOP16 NOP4 NOP4 NOP4 NOP4
#define NOP64 NOP16 NOP16 NOP16 NOP16

/* walk is the measured loop. The asm names p as read and written so that
 * the load stays before the nops, which the hardware sees as independent of
 * it. A host build (for the expected output) walks without them. */
WL_NOINLINE
static struct line *walk(struct line *p, uint64_t steps)
{
	while (steps-- > 0) {
		p = p->next;
#ifdef __alpha__
		__asm__ volatile(NOP64 NOP64 NOP64 : "+r"(p));
#endif
	}
	return p;
}

int main(int argc, char **argv)
{
	uint64_t n = wl_arg(argc, argv, 1, 16384, 1ULL << 22);
	uint64_t steps = wl_arg(argc, argv, 2, 60000, 1ULL << 40);
	struct line *ring, *end;
	uint32_t *perm;
	wl_rng r;
	uint64_t h = WL_SEED0;

	if (n < 2) {
		fprintf(stderr, "missloop: need at least 2 lines\n");
		return 2;
	}
	ring = wl_xmalloc(n * sizeof *ring);
	perm = wl_xmalloc(n * sizeof *perm);
	wl_seed(&r, 7);
	for (uint64_t i = 0; i < n; i++)
		perm[i] = (uint32_t)i;
	for (uint64_t i = n - 1; i > 0; i--) { /* Sattolo: one n-cycle */
		uint32_t j = wl_below(&r, (uint32_t)i);
		uint32_t t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	for (uint64_t i = 0; i < n; i++) {
		ring[i].next = &ring[perm[i]];
		for (int k = 0; k < 7; k++)
			ring[i].pad[k] = i;
	}
	free(perm);
	end = walk(&ring[0], steps);
	h = wl_mix(h, (uint64_t)(end - ring));
	printf("missloop: %" PRIu64 " lines (%" PRIu64 " KB), %" PRIu64 " steps\n",
	       n, n * sizeof *ring / 1024, steps);
	printf("end line %" PRIu64 "\n", (uint64_t)(end - ring));
	wl_checksum("missloop", h);
	free(ring);
	return 0;
}
