/* hot.c: known hot functions for dcpi profile --linux's agreement test
 * with perf record (linuxhost/linuxrun). hot_a does 6 parts of the work,
 * hot_b 3 and hot_c 1, each in its own loop; noinline keeps them
 * distinct procedures at -O2. Build: gcc -O2 -g -fno-omit-frame-pointer. */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long sink;

#define LCG(x) ((x) * 6364136223846793005UL + 1442695040888963407UL)

__attribute__((noinline)) unsigned long hot_a(unsigned long n) {
	unsigned long x = 1;
	for (unsigned long i = 0; i < 6 * n; i++)
		x = LCG(x);
	return x;
}

__attribute__((noinline)) unsigned long hot_b(unsigned long n) {
	unsigned long x = 2;
	for (unsigned long i = 0; i < 3 * n; i++)
		x = LCG(x);
	return x;
}

__attribute__((noinline)) unsigned long hot_c(unsigned long n) {
	unsigned long x = 3;
	for (unsigned long i = 0; i < n; i++)
		x = LCG(x);
	return x;
}

int main(int argc, char **argv) {
	unsigned long n = argc > 1 ? strtoul(argv[1], 0, 10) : 10000000;
	for (int round = 0; round < 10; round++) {
		sink += hot_a(n / 10);
		sink += hot_b(n / 10);
		sink += hot_c(n / 10);
	}
	printf("%lu\n", sink);
	return 0;
}
