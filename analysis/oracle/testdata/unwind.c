/* unwind: what the workloads do not do, for the oracle's tests: longjmp
 * out of a recursion (a return that pops several frames), sibling calls
 * gcc turns into tail calls, and calls through a function pointer. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

static jmp_buf env;
static volatile int sink;

__attribute__((noinline)) static void dive(int depth, int limit) {
	sink += depth;
	if (depth == limit)
		longjmp(env, depth);
	if (depth & 1)
		sink ^= depth;
	dive(depth + 1, limit);
	sink--; /* not a tail call */
}

__attribute__((noinline)) static int leaf(int x) { return x * 3 + sink; }
__attribute__((noinline)) static int tail(int x) { sink++; return leaf(x + 1); } /* a sibling call */

static int (*volatile fp)(int) = tail;

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 20;
	long sum = 0;
	for (int i = 0; i < n; i++) {
		int r = setjmp(env);
		if (r == 0)
			dive(0, i % 7 + 1);
		sum += r + fp(i);
	}
	printf("unwind %ld\n", sum);
	return 0;
}
