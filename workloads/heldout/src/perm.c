/*
 * perm - the Stanford Integer Benchmarks' Perm (J. Hennessy, 1988; public
 * domain): all permutations of 7 elements by recursive swapping,
 * repeated. Held out (docs/dcpicalc.md).
 *
 * usage: perm [rounds]   (default 30)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static int permarray[11];
static unsigned pctr;

static void swap(int *a, int *b)
{
	int t = *a;
	*a = *b;
	*b = t;
}

static void initialize(void)
{
	for (int i = 1; i <= 7; i++)
		permarray[i] = i - 1;
}

__attribute__((noinline)) static void permute(int n)
{
	pctr++;
	if (n != 1) {
		permute(n - 1);
		for (int k = n - 1; k >= 1; k--) {
			swap(&permarray[n], &permarray[k]);
			permute(n - 1);
			swap(&permarray[n], &permarray[k]);
		}
	}
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 30;
	uint64_t sum = 0;
	for (int r = 0; r < rounds; r++) {
		pctr = 0;
		for (int i = 1; i <= 5; i++) {
			initialize();
			permute(7);
		}
		if (pctr != 43300)
			return 1;
		sum += pctr;
	}
	printf("perm %d rounds\nperm checksum %016" PRIx64 "\n", rounds, sum);
	return 0;
}
