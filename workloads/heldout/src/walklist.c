/*
 * walklist - the analyst's linked-list walk: a list of nodes scattered over
 * a large heap (allocated in order, linked in a random order), walked again
 * and again. Each step's address comes from the previous node's load, so
 * every D-cache and DTB miss is paid in full: the pointer-chasing loop of
 * dcpi calc's "never misleads" check.
 *
 * usage: walklist [nodes [walks]]   (defaults 32768, 24)
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct node {
	struct node *next;
	int64_t val;
	char pad[240]; /* 256-byte nodes: one per 8 KB page holds 32 */
};

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint32_t next32(void)
{
	rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)(rng >> 32);
}

__attribute__((noinline)) static int64_t walk_list(const struct node *p)
{
	int64_t sum = 0;

	while (p != NULL) {
		sum += p->val;
		p = p->next;
	}
	return sum;
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 32768;
	uint64_t walks = argc > 2 ? strtoull(argv[2], NULL, 10) : 24;
	struct node *heap = malloc(n * sizeof *heap);
	uint32_t *order = malloc(n * sizeof *order);

	if (heap == NULL || order == NULL || n == 0)
		return 1;
	for (uint64_t i = 0; i < n; i++)
		order[i] = (uint32_t)i;
	for (uint64_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
		uint32_t j = next32() % (uint32_t)(i + 1), t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (uint64_t i = 0; i < n; i++) {
		heap[order[i]].val = (int64_t)(next32() & 0xffff);
		heap[order[i]].next = i + 1 < n ? &heap[order[i + 1]] : NULL;
	}
	int64_t total = 0;
	for (uint64_t w = 0; w < walks; w++)
		total += walk_list(&heap[order[0]]);
	printf("walklist %" PRIu64 " nodes, %" PRIu64 " walks\n", n, walks);
	printf("walklist checksum %016" PRIx64 "\n", (uint64_t)total);
	free(order);
	free(heap);
	return 0;
}
