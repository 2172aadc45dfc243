/* A user's own program for the instrumenter's tests: recursion, a switch
 * compiled to a jump table, calls through function pointers, setjmp and a
 * longjmp from deep recursion, malloc, and a forked child that prints and
 * _exits. Built -O2 -static -mcpu=ev5 -Wl,--no-relax by the test. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static jmp_buf jb;

static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

static int sw(int x)
{
	switch (x & 7) {
	case 0: return 3;
	case 1: return x * 2;
	case 2: return x - 7;
	case 3: return x ^ 5;
	case 4: return 11;
	case 5: return x / 3;
	case 6: return -x;
	default: return 1;
	}
}

static void deep(int n)
{
	if (n == 0)
		longjmp(jb, 42);
	deep(n - 1);
}

int main(void)
{
	int (*fp[2])(int) = {fib, sw};
	long s = 0;
	for (int i = 0; i < 2000; i++)
		s += fp[i & 1](i % 20);
	int v = setjmp(jb);
	if (v == 0)
		deep(30);
	char *b = malloc(1000);
	memset(b, 'x', 999);
	b[999] = 0;
	pid_t p = fork();
	if (p == 0) {
		printf("child %zu\n", strlen(b));
		fflush(stdout);
		_exit(3);
	}
	int st;
	waitpid(p, &st, 0);
	printf("s=%ld v=%d child=%d %.3f\n", s, v, WEXITSTATUS(st), s / 7.0);
	return 0;
}
