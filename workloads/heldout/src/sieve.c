/*
 * sieve - the BYTE magazine Sieve of Eratosthenes (J. Gilbreath, BYTE,
 * September 1981; public domain): primes below 16,382 over an array of
 * flags, repeated. Held out (docs/dcpicalc.md).
 *
 * usage: sieve [iterations]   (default 400)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define SIZE 8190

static char flags[SIZE + 1];

__attribute__((noinline)) static int sieve(void)
{
	int count = 0;
	for (int i = 0; i <= SIZE; i++)
		flags[i] = 1;
	for (int i = 0; i <= SIZE; i++) {
		if (flags[i]) {
			int prime = i + i + 3;
			for (int k = i + prime; k <= SIZE; k += prime)
				flags[k] = 0;
			count++;
		}
	}
	return count;
}

int main(int argc, char **argv)
{
	int iter = argc > 1 ? atoi(argv[1]) : 400;
	uint64_t sum = 0;
	for (int r = 0; r < iter; r++) {
		int n = sieve();
		if (n != 1899)
			return 1;
		sum += (uint64_t)n;
	}
	printf("sieve %d iterations\nsieve checksum %016" PRIx64 "\n", iter, sum);
	return 0;
}
