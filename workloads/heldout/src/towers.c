/*
 * towers - the Stanford Integer Benchmarks' Towers (J. Hennessy, 1988;
 * public domain): towers of Hanoi over linked stacks of discs taken from
 * a free list, 14 discs, repeated. Held out (docs/dcpicalc.md).
 *
 * usage: towers [rounds]   (default 20)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define MAXCELLS 18

struct element {
	int discsize;
	int next;
};

static int stack[4];
static struct element cellspace[MAXCELLS + 1];
static int freelist, movesdone;

static void makenull(int s) { stack[s] = 0; }

static int getelement(void)
{
	int temp = 0;
	if (freelist > 0) {
		temp = freelist;
		freelist = cellspace[freelist].next;
	} else
		exit(2);
	return temp;
}

static void push(int i, int s)
{
	if (stack[s] > 0 && cellspace[stack[s]].discsize <= i)
		exit(3);
	int localel = getelement();
	cellspace[localel].next = stack[s];
	stack[s] = localel;
	cellspace[localel].discsize = i;
}

static void init(int s, int n)
{
	makenull(s);
	for (int discctr = n; discctr >= 1; discctr--)
		push(discctr, s);
}

static int pop(int s)
{
	if (stack[s] > 0) {
		int temp = cellspace[stack[s]].discsize;
		int temp1 = cellspace[stack[s]].next;
		cellspace[stack[s]].next = freelist;
		freelist = stack[s];
		stack[s] = temp1;
		return temp;
	}
	exit(4);
}

static void move(int s1, int s2)
{
	push(pop(s1), s2);
	movesdone++;
}

__attribute__((noinline)) static void tower(int i, int j, int k)
{
	if (k == 1)
		move(i, j);
	else {
		int other = 6 - i - j;
		tower(i, other, k - 1);
		move(i, j);
		tower(other, j, k - 1);
	}
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 20;
	uint64_t sum = 0;
	for (int r = 0; r < rounds; r++) {
		for (int i = 1; i <= MAXCELLS; i++)
			cellspace[i].next = i - 1;
		freelist = MAXCELLS;
		init(1, 14);
		makenull(2);
		makenull(3);
		movesdone = 0;
		tower(1, 2, 14);
		if (movesdone != 16383)
			return 1;
		sum += (uint64_t)movesdone;
	}
	printf("towers %d rounds\ntowers checksum %016" PRIx64 "\n", rounds, sum);
	return 0;
}
