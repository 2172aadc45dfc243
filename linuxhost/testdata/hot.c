/* hot.c: known hot functions for dcpi profile --linux's agreement test
 * with perf record. Each function spins a share of the work the
 * arguments give; noinline keeps them distinct procedures at -O2. */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long sink;

__attribute__((noinline)) unsigned long spin(unsigned long n, unsigned long seed) {
	unsigned long x = seed;
	for (unsigned long i = 0; i < n; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}

__attribute__((noinline)) void hot_a(unsigned long n) { sink += spin(n * 6, 1); }
__attribute__((noinline)) void hot_b(unsigned long n) { sink += spin(n * 3, 2); }
__attribute__((noinline)) unsigned long hot_c(unsigned long n) {
	unsigned long x = 3;
	for (unsigned long i = 0; i < n; i++)
		x ^= (x << 7) ^ (x >> 9) ^ i;
	return x;
}

int main(int argc, char **argv) {
	unsigned long n = argc > 1 ? strtoul(argv[1], 0, 10) : 20000000;
	for (int round = 0; round < 10; round++) {
		hot_a(n / 10);
		hot_b(n / 10);
		sink += hot_c(n / 10);
	}
	printf("%lu\n", sink);
	return 0;
}
