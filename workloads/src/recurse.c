/*
 * recurse - call-heavy code: Ackermann's function, naive Fibonacci, a binary
 * tree built, walked and freed recursively, and n-queens by backtracking.
 * Deep and frequent jsr/ret, stack traffic, and return-address prediction.
 *
 * usage: recurse [scale]   (default 1, at most 4; work grows about 4x per
 *                          step, and the tree takes 64 MB at 4)
 */
#include "wl.h"

struct tree {
	struct tree *left, *right;
	uint64_t value;
};

static uint64_t calls;

static uint64_t ackermann(uint64_t m, uint64_t n)
{
	calls++;
	if (m == 0)
		return n + 1;
	if (n == 0)
		return ackermann(m - 1, 1);
	return ackermann(m - 1, ackermann(m, n - 1));
}

static uint64_t fib(uint64_t n)
{
	calls++;
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static struct tree *build(uint64_t depth, uint64_t seed)
{
	struct tree *t = wl_xmalloc(sizeof *t);
	calls++;
	t->value = seed * 2654435761u % 1000003;
	if (depth == 0) {
		t->left = t->right = NULL;
	} else {
		t->left = build(depth - 1, 2 * seed);
		t->right = build(depth - 1, 2 * seed + 1);
	}
	return t;
}

/* walk returns a post-order digest, so the shape matters, not only the sum. */
static uint64_t walk(const struct tree *t, uint64_t *nodes)
{
	calls++;
	if (t == NULL)
		return 1;
	(*nodes)++;
	uint64_t l = walk(t->left, nodes);
	uint64_t r = walk(t->right, nodes);
	return wl_mix(wl_mix(l, r), t->value);
}

static void release(struct tree *t)
{
	if (t == NULL)
		return;
	release(t->left);
	release(t->right);
	free(t);
}

/* queens counts placements row by row; cols/d1/d2 are occupied bitmasks. */
static uint64_t queens(int n, int row, uint32_t cols, uint32_t d1, uint32_t d2)
{
	calls++;
	if (row == n)
		return 1;
	uint64_t count = 0;
	for (int c = 0; c < n; c++) {
		uint32_t cb = 1u << c, a = 1u << (row + c),
			 b = 1u << (row - c + n - 1);
		if ((cols & cb) || (d1 & a) || (d2 & b))
			continue;
		count += queens(n, row + 1, cols | cb, d1 | a, d2 | b);
	}
	return count;
}

int main(int argc, char **argv)
{
	uint64_t scale = wl_arg(argc, argv, 1, 1, 4);
	uint64_t h = WL_SEED0, nodes = 0;

	/* Each step of scale multiplies every part's work by about 4. */
	uint64_t ack_n = 4 + scale;
	uint64_t fib_n = 20 + 3 * scale;
	uint64_t depth = 12 + 2 * scale;
	int nq = (int)(7 + scale);

	calls = 0;
	uint64_t a = ackermann(2, 50 * scale);
	uint64_t a3 = ackermann(3, ack_n);
	uint64_t ack_calls = calls;
	calls = 0;
	uint64_t f = fib(fib_n);
	uint64_t fib_calls = calls;
	calls = 0;
	struct tree *t = build(depth, 1);
	uint64_t d = walk(t, &nodes);
	release(t);
	uint64_t tree_calls = calls;
	calls = 0;
	uint64_t q = queens(nq, 0, 0, 0, 0);
	uint64_t queen_calls = calls;

	printf("recurse: scale %" PRIu64 "\n", scale);
	printf("ackermann(2,%" PRIu64 ") = %" PRIu64 ", ackermann(3,%" PRIu64
	       ") = %" PRIu64 " (%" PRIu64 " calls)\n", 50 * scale, a, ack_n, a3,
	       ack_calls);
	printf("fib(%" PRIu64 ") = %" PRIu64 " (%" PRIu64 " calls)\n", fib_n, f,
	       fib_calls);
	printf("tree depth %" PRIu64 ": %" PRIu64 " nodes (%" PRIu64
	       " calls)\n", depth, nodes, tree_calls);
	printf("%d-queens: %" PRIu64 " solutions (%" PRIu64 " calls)\n", nq, q,
	       queen_calls);
	h = wl_mix(h, a);
	h = wl_mix(h, a3);
	h = wl_mix(h, f);
	h = wl_mix(h, d);
	h = wl_mix(h, q);
	h = wl_mix(h, ack_calls + fib_calls + tree_calls + queen_calls);
	wl_checksum("recurse", h);
	return 0;
}
