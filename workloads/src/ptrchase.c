/*
 * ptrchase - dependent loads around a randomly permuted ring of nodes, the
 * classic latency probe: each load's address comes from the previous load, so
 * nothing overlaps and every miss is paid in full. At the default size the
 * ring is 8 MB (256 K nodes of 32 bytes, one Alpha cache line each), more than
 * a 4 MB board cache.
 *
 * usage: ptrchase [nodes [steps]]   (defaults 262144, 2097152)
 *
 * The permutation is a single cycle made with Sattolo's algorithm from our own
 * LCG, so every node is visited once per lap.
 */
#include "wl.h"

struct node {
	struct node *next;
	uint64_t index;
	uint64_t weight;
	uint64_t pad;
};

/* make_ring links the nodes into one random cycle: Sattolo's shuffle
 * (swapping with j < i, never i itself) yields a single n-cycle. */
WL_NOINLINE
static struct node *make_ring(uint64_t n, wl_rng *r)
{
	struct node *ring = wl_xmalloc(n * sizeof *ring);
	uint32_t *perm = wl_xmalloc(n * sizeof *perm);

	for (uint64_t i = 0; i < n; i++)
		perm[i] = (uint32_t)i;
	for (uint64_t i = n - 1; i > 0; i--) {
		uint32_t j = wl_below(r, (uint32_t)i);
		uint32_t t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	for (uint64_t i = 0; i < n; i++) {
		ring[i].next = &ring[perm[i]];
		ring[i].index = i;
		ring[i].weight = wl_next32(r) & 0xffff;
		ring[i].pad = 0;
	}
	free(perm);
	return ring;
}

/* lap walks once around from start, returning the length (at most n + 1)
 * and the sum of the weights. */
WL_NOINLINE
static uint64_t lap(struct node *start, uint64_t n, uint64_t *sum)
{
	struct node *p = start;
	uint64_t len = 0, s = 0;

	do {
		s += p->weight;
		p = p->next;
		len++;
	} while (p != start && len <= n);
	*sum = s;
	return len;
}

/* chase is the measured loop: one dependent load per step. */
WL_NOINLINE
static struct node *chase(struct node *p, uint64_t steps, uint64_t *sum)
{
	uint64_t s = 0;

	while (steps-- > 0) {
		s += p->weight;
		p = p->next;
	}
	*sum = s;
	return p;
}

int main(int argc, char **argv)
{
	uint64_t n = wl_arg(argc, argv, 1, 262144, 1ULL << 24);
	uint64_t steps = wl_arg(argc, argv, 2, 2097152, 1ULL << 40);
	uint64_t h = WL_SEED0, sum, lap_sum, len;
	struct node *ring, *end;
	wl_rng r;

	if (n < 2) {
		fprintf(stderr, "ptrchase: need at least 2 nodes\n");
		return 2;
	}
	wl_seed(&r, 42);
	ring = make_ring(n, &r);
	len = lap(&ring[0], n, &lap_sum);
	end = chase(&ring[0], steps, &sum);
	h = wl_mix(h, sum);
	h = wl_mix(h, end->index);
	h = wl_mix(h, lap_sum);

	printf("ptrchase: %" PRIu64 " nodes (%" PRIu64 " KB), %" PRIu64
	       " steps\n", n, n * sizeof(struct node) / 1024, steps);
	printf("single cycle: %s (lap %" PRIu64 ")\n", len == n ? "yes" : "NO",
	       len);
	printf("end node %" PRIu64 ", weight sum %" PRIu64 "\n", end->index, sum);
	wl_checksum("ptrchase", h);
	free(ring);
	return 0;
}
