/*
 * bitcnt - MiBench's automotive bitcount (Guthaus et al., WWC 2001; Bob
 * Stout's bit-counting routines, public domain): the same pseudo-random
 * words counted by shifting, by Kernighan's loop, by nibble table and by
 * parallel adds. Held out (docs/dcpicalc.md).
 *
 * usage: bitcnt [words]   (default 200000)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static const int nibble[16] = {0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4};

__attribute__((noinline)) static int bit_shifter(uint64_t x)
{
	int n = 0;
	for (int i = 0; x && i < 64; i++, x >>= 1)
		n += (int)(x & 1);
	return n;
}

__attribute__((noinline)) static int bit_kernighan(uint64_t x)
{
	int n = 0;
	while (x) {
		x &= x - 1;
		n++;
	}
	return n;
}

__attribute__((noinline)) static int bit_nibbles(uint64_t x)
{
	int n = 0;
	while (x) {
		n += nibble[x & 15];
		x >>= 4;
	}
	return n;
}

__attribute__((noinline)) static int bit_parallel(uint64_t x)
{
	x = x - ((x >> 1) & 0x5555555555555555ULL);
	x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
	return (int)((x * 0x0101010101010101ULL) >> 56);
}

int main(int argc, char **argv)
{
	long words = argc > 1 ? atol(argv[1]) : 200000;
	uint64_t s = 0x9e3779b97f4a7c15ULL, total[4] = {0, 0, 0, 0};

	for (long i = 0; i < words; i++) {
		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		uint64_t x = s >> (s >> 60); /* words of varied length */
		total[0] += bit_shifter(x);
		total[1] += bit_kernighan(x);
		total[2] += bit_nibbles(x);
		total[3] += bit_parallel(x);
	}
	if (total[0] != total[1] || total[1] != total[2] || total[2] != total[3])
		return 1;
	printf("bitcnt %ld words\nbitcnt checksum %016" PRIx64 "\n", words, total[0]);
	return 0;
}
