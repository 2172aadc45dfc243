/*
 * strproc - text processing over a generated corpus: building lines with
 * memcpy, tokenizing, counting words in a hash table, sorting the vocabulary
 * with qsort/strcmp, searching with Knuth-Morris-Pratt, and matching lines
 * against a few patterns with a small backtracking regular-expression engine
 * (literals, '.', character classes, '*', '+', '?', '^', '$').
 * Byte loads and stores: on the 21164 (no BWX) every byte access is an
 * ldq_u/extbl or insbl/mskbl/stq_u sequence, which this program is full of.
 *
 * usage: strproc [lines]   (default 800)
 */
#include <string.h>

#include "wl.h"

static const char *const vocab[] = {
	"alpha",  "beta",    "cache",  "cycle",   "daemon", "digital",
	"event",  "fetch",   "gamma",  "image",   "issue",  "kernel",
	"load",   "miss",    "node",   "offset",  "pipe",   "profile",
	"queue",  "replay",  "sample", "stall",   "store",  "table",
	"trap",   "unit",    "vax",    "write",   "xor",    "yield",
	"zero",   "branch",  "buffer", "counter", "dual",   "epoch",
	"flush",  "graph",   "hazard", "ipi",
};
#define NVOCAB (sizeof vocab / sizeof vocab[0])

/* ---- corpus ---- */

WL_NOINLINE
static char *make_corpus(uint64_t lines, uint64_t *len)
{
	size_t cap = lines * 96 + 1, n = 0;
	char *text = wl_xmalloc(cap);
	char line[128];
	wl_rng r;

	wl_seed(&r, 99);
	for (uint64_t l = 0; l < lines; l++) {
		size_t ln = 0;
		uint32_t words = 4 + wl_below(&r, 8);
		for (uint32_t w = 0; w < words; w++) {
			const char *word = vocab[wl_below(&r, NVOCAB)];
			size_t wn = strlen(word);
			if (ln + wn + 8 >= sizeof line)
				break;
			if (w > 0)
				line[ln++] = (wl_below(&r, 6) == 0) ? ',' : ' ';
			memcpy(line + ln, word, wn);
			ln += wn;
			if (wl_below(&r, 5) == 0) {
				/* a number, so patterns with classes have work */
				uint32_t v = wl_below(&r, 1000);
				line[ln++] = ' ';
				line[ln++] = (char)('0' + v / 100);
				line[ln++] = (char)('0' + v / 10 % 10);
				line[ln++] = (char)('0' + v % 10);
			}
		}
		line[ln++] = '\n';
		memcpy(text + n, line, ln);
		n += ln;
	}
	text[n] = '\0';
	*len = n;
	return text;
}

/* ---- word counting ---- */

struct word {
	char *text;
	uint64_t count;
};

struct wordtab {
	struct word *slots;
	uint64_t mask, used;
};

static uint64_t str_hash(const unsigned char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 1099511628211ULL;
	}
	return h;
}

WL_NOINLINE
static void count_word(struct wordtab *t, const char *s, size_t n)
{
	uint64_t i = str_hash((const unsigned char *)s, n) & t->mask;
	for (;;) {
		struct word *w = &t->slots[i];
		if (w->text == NULL) {
			w->text = wl_xmalloc(n + 1);
			memcpy(w->text, s, n);
			w->text[n] = '\0';
			w->count = 1;
			t->used++;
			return;
		}
		if (strncmp(w->text, s, n) == 0 && w->text[n] == '\0') {
			w->count++;
			return;
		}
		i = (i + 1) & t->mask;
	}
}

static int by_text(const void *a, const void *b)
{
	const struct word *x = a, *y = b;
	return strcmp(x->text, y->text);
}

/* ---- Knuth-Morris-Pratt ---- */

WL_NOINLINE
static uint64_t kmp_count(const char *text, size_t n, const char *pat)
{
	size_t m = strlen(pat), k = 0;
	size_t fail[64];
	uint64_t found = 0;

	if (m == 0 || m > 64)
		return 0;
	fail[0] = 0;
	for (size_t i = 1; i < m; i++) {
		while (k > 0 && pat[i] != pat[k])
			k = fail[k - 1];
		if (pat[i] == pat[k])
			k++;
		fail[i] = k;
	}
	k = 0;
	for (size_t i = 0; i < n; i++) {
		while (k > 0 && text[i] != pat[k])
			k = fail[k - 1];
		if (text[i] == pat[k])
			k++;
		if (k == m) {
			found++;
			k = fail[k - 1];
		}
	}
	return found;
}

/* ---- a small regular-expression matcher ----
 * A pattern is compiled to a list of atoms, each an accepted byte set and a
 * repetition (exactly once, '?', '*' or '+'); matching backtracks over them.
 */

enum { ONE, OPT, STAR, PLUS };

struct atom {
	uint8_t set[32]; /* bitmap of accepted bytes */
	int rep;
};

struct regex {
	struct atom atom[32];
	int n;
	int anchored_start, anchored_end;
};

static void set_add(uint8_t *set, unsigned c)
{
	set[c >> 3] |= (uint8_t)(1u << (c & 7));
}

static int set_has(const uint8_t *set, unsigned c)
{
	return (set[c >> 3] >> (c & 7)) & 1;
}

WL_NOINLINE
static int compile(struct regex *re, const char *p)
{
	const unsigned char *s = (const unsigned char *)p;

	memset(re, 0, sizeof *re);
	if (*s == '^') {
		re->anchored_start = 1;
		s++;
	}
	while (*s != '\0') {
		if (*s == '$' && s[1] == '\0') {
			re->anchored_end = 1;
			break;
		}
		if (re->n == 32)
			return -1;
		struct atom *a = &re->atom[re->n++];
		if (*s == '.') {
			for (unsigned c = 1; c < 256; c++)
				if (c != '\n')
					set_add(a->set, c);
			s++;
		} else if (*s == '[') {
			int negate = 0;
			s++;
			if (*s == '^') {
				negate = 1;
				s++;
			}
			while (*s != '\0' && *s != ']') {
				unsigned lo = *s, hi = *s;
				if (s[1] == '-' && s[2] != '\0' && s[2] != ']') {
					hi = s[2];
					s += 2;
				}
				for (unsigned c = lo; c <= hi; c++)
					set_add(a->set, c);
				s++;
			}
			if (*s != ']')
				return -1;
			s++;
			if (negate)
				for (int i = 0; i < 32; i++)
					a->set[i] = (uint8_t)~a->set[i];
		} else {
			set_add(a->set, *s);
			s++;
		}
		if (*s == '*' || *s == '+' || *s == '?') {
			a->rep = *s == '*' ? STAR : *s == '+' ? PLUS : OPT;
			s++;
		}
	}
	return 0;
}

WL_NOINLINE
static int match_here(const struct regex *re, int i, const unsigned char *s,
		      const unsigned char *end)
{
	if (i == re->n)
		return !re->anchored_end || s == end;
	const struct atom *a = &re->atom[i];
	int min = a->rep == PLUS || a->rep == ONE;
	int max = (a->rep == STAR || a->rep == PLUS) ? (int)(end - s) : 1;
	int k = 0;

	while (k < max && s + k < end && set_has(a->set, s[k]))
		k++;
	/* Greedy: try the longest run first, back off one byte at a time. */
	for (; k >= min; k--)
		if (match_here(re, i + 1, s + k, end))
			return 1;
	return 0;
}

WL_NOINLINE
static int re_match(const struct regex *re, const char *line, size_t n)
{
	const unsigned char *s = (const unsigned char *)line, *end = s + n;

	if (re->anchored_start)
		return match_here(re, 0, s, end);
	for (const unsigned char *p = s; p <= end; p++)
		if (match_here(re, 0, p, end))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t lines = wl_arg(argc, argv, 1, 800, 1ULL << 22);
	uint64_t len, h = WL_SEED0;
	char *text = make_corpus(lines, &len);
	static const char *const kmp_pats[] = {"cache miss", "load", "ss",
					       "replay trap", "ipi,"};
	static const char *const re_pats[] = {
		"^alpha", "[0-9][0-9][0-9]$", "st[a-z]+ [a-z]*e", "c.c.e",
		"^[^,]*$", "profile,? sample", "x?or [0-9]+"};

	/* Tokenize into a word table. */
	struct wordtab wt;
	wt.mask = 4095; /* room for 40 words and 1000 numbers */
	wt.used = 0;
	wt.slots = wl_xmalloc((wt.mask + 1) * sizeof *wt.slots);
	memset(wt.slots, 0, (wt.mask + 1) * sizeof *wt.slots);
	uint64_t tokens = 0, longest = 0, nlines = 0;
	for (const char *p = text; *p != '\0';) {
		size_t span = strspn(p, " ,\n");
		p += span;
		size_t w = strcspn(p, " ,\n");
		if (w == 0)
			continue;
		count_word(&wt, p, w);
		tokens++;
		if (w > longest)
			longest = w;
		p += w;
	}

	/* Sorted vocabulary: compact the table, qsort by strcmp. */
	struct word *words = wl_xmalloc(wt.used * sizeof *words);
	uint64_t nw = 0;
	for (uint64_t i = 0; i <= wt.mask; i++)
		if (wt.slots[i].text != NULL)
			words[nw++] = wt.slots[i];
	qsort(words, nw, sizeof *words, by_text);
	for (uint64_t i = 0; i < nw; i++) {
		h = wl_mix(h, str_hash((const unsigned char *)words[i].text,
				       strlen(words[i].text)));
		h = wl_mix(h, words[i].count);
	}

	printf("strproc: %" PRIu64 " lines, %" PRIu64 " bytes, %" PRIu64
	       " tokens, %" PRIu64 " distinct, longest %" PRIu64 "\n", lines,
	       len, tokens, nw, longest);
	printf("first %s %" PRIu64 ", last %s %" PRIu64 "\n", words[0].text,
	       words[0].count, words[nw - 1].text, words[nw - 1].count);

	for (size_t i = 0; i < sizeof kmp_pats / sizeof kmp_pats[0]; i++) {
		uint64_t c = kmp_count(text, len, kmp_pats[i]);
		printf("kmp \"%s\": %" PRIu64 "\n", kmp_pats[i], c);
		h = wl_mix(h, c);
	}

	for (size_t i = 0; i < sizeof re_pats / sizeof re_pats[0]; i++) {
		struct regex re;
		uint64_t matched = 0;
		if (compile(&re, re_pats[i]) != 0) {
			printf("regex \"%s\": bad pattern\n", re_pats[i]);
			continue;
		}
		nlines = 0;
		for (const char *p = text; *p != '\0';) {
			const char *nl = strchr(p, '\n');
			size_t n = nl ? (size_t)(nl - p) : strlen(p);
			matched += (uint64_t)re_match(&re, p, n);
			nlines++;
			p += n + (nl != NULL);
		}
		printf("regex \"%s\": %" PRIu64 " of %" PRIu64 " lines\n",
		       re_pats[i], matched, nlines);
		h = wl_mix(h, matched);
	}

	wl_checksum("strproc", h);
	for (uint64_t i = 0; i < nw; i++)
		free(words[i].text);
	free(words);
	free(wt.slots);
	free(text);
	return 0;
}
