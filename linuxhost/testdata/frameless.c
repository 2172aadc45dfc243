/* frameless.c: a hot leaf called through a chain of known functions, for
 * linuxhost's test of call stacks walked from copied user stacks. Built
 * as distributions build: gcc -O2 -fomit-frame-pointer -g. No function
 * keeps a frame pointer (rbp is one more callee-saved register, which
 * inner uses), so the kernel's frame-pointer chain loses the callers;
 * .eh_frame has every function's rules. noinline keeps the functions
 * apart, and no call is in tail position (a sibling call would leave
 * its caller's frame). */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long sink;

#define LCG(x) ((x) * 6364136223846793005UL + 1442695040888963407UL)

__attribute__((noinline)) unsigned long leaf(unsigned long n) {
	unsigned long x = n;
	for (unsigned long i = 0; i < n; i++)
		x = LCG(x);
	return x;
}

/* inner keeps six values live across the call: it saves rbx, rbp and
 * r12-r15 and uses rbp as data. */
__attribute__((noinline)) unsigned long inner(unsigned long n) {
	unsigned long a = sink, b = sink * 3, c = sink ^ n, d = sink + 7, e = sink << 2, f = sink | 5;
	unsigned long r = leaf(n);
	return r + a * b + c * d + e * f;
}

/* middle has a frame of its own (an array on the stack). */
__attribute__((noinline)) unsigned long middle(unsigned long n) {
	volatile unsigned long buf[16];
	for (int i = 0; i < 16; i++)
		buf[i] = n + i;
	unsigned long r = inner(n);
	return r ^ buf[n & 15];
}

__attribute__((noinline)) unsigned long outer(unsigned long n) {
	unsigned long r = middle(n);
	sink += r;
	return r + 1;
}

int main(int argc, char **argv) {
	unsigned long n = argc > 1 ? strtoul(argv[1], 0, 10) : 100000000;
	unsigned long t = 0;
	for (int round = 0; round < 100; round++)
		t += outer(n / 100);
	printf("%lu\n", t);
	return 0;
}
