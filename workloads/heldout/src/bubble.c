/*
 * bubble - the Stanford Integer Benchmarks' Bubble (J. Hennessy, 1988;
 * public domain): bubble sort of 500 pseudo-random integers, repeated.
 * Held out: dcpi calc was never tuned on it (docs/dcpicalc.md).
 *
 * usage: bubble [rounds]   (default 40)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define SORTELEMENTS 500

static int32_t seed;
static int32_t sortlist[SORTELEMENTS + 1];

static int32_t rand_stanford(void)
{
	seed = (seed * 1309 + 13849) & 65535;
	return seed;
}

static void binitarr(int32_t *biggest, int32_t *littlest)
{
	seed = 74755;
	*biggest = 0;
	*littlest = 0;
	for (int i = 1; i <= SORTELEMENTS; i++) {
		int32_t t = rand_stanford();
		sortlist[i] = t - (t / 100000) * 100000 - 50000;
		if (sortlist[i] > *biggest)
			*biggest = sortlist[i];
		else if (sortlist[i] < *littlest)
			*littlest = sortlist[i];
	}
}

__attribute__((noinline)) static void bubble(int32_t *list, int n)
{
	int top = n;
	while (top > 1) {
		int i = 1;
		while (i < top) {
			if (list[i] > list[i + 1]) {
				int32_t j = list[i];
				list[i] = list[i + 1];
				list[i + 1] = j;
			}
			i++;
		}
		top--;
	}
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 40;
	uint64_t sum = 0;
	for (int r = 0; r < rounds; r++) {
		int32_t big, little;
		binitarr(&big, &little);
		bubble(sortlist, SORTELEMENTS);
		if (sortlist[1] != little || sortlist[SORTELEMENTS] != big)
			return 1;
		sum = sum * 31 + (uint32_t)sortlist[SORTELEMENTS / 2];
	}
	printf("bubble %d rounds\nbubble checksum %016" PRIx64 "\n", rounds, sum);
	return 0;
}
