/*
 * hashdb - a small in-memory "database": a chained hash table of records
 * (malloc'd, with a fixed-size name field), loaded with inserts, then a stream
 * of mixed queries: lookups that hit and miss, updates, deletes and
 * re-inserts. Pointer-heavy, branchy, with malloc/free churn.
 *
 * usage: hashdb [records [operations]]   (defaults 20000, 120000)
 */
#include <string.h>

#include "wl.h"

struct record {
	struct record *next;
	uint64_t key;
	uint64_t balance;
	uint32_t version;
	unsigned char name[20];
};

struct table {
	struct record **bucket;
	uint64_t mask;
	uint64_t count;
	uint64_t probes;
};

static uint64_t hash_key(uint64_t k)
{
	k ^= k >> 31;
	k *= 0x7fb5d329728ea185ULL;
	k ^= k >> 27;
	k *= 0x81dadef4bc2dd44dULL;
	k ^= k >> 33;
	return k;
}

WL_NOINLINE
static void make_name(unsigned char name[20], uint64_t key)
{
	static const unsigned char letters[] = "abcdefghijklmnopqrstuvwxyz";
	int i = 0;

	do {
		name[i++] = letters[key % 26];
		key /= 26;
	} while (key != 0 && i < 19);
	name[i] = '\0';
}

WL_NOINLINE
static struct record **slot(struct table *t, uint64_t key)
{
	struct record **pp = &t->bucket[hash_key(key) & t->mask];
	while (*pp != NULL && (*pp)->key != key) {
		pp = &(*pp)->next;
		t->probes++;
	}
	return pp;
}

WL_NOINLINE
static int insert(struct table *t, uint64_t key, uint64_t balance)
{
	struct record **pp = slot(t, key);
	if (*pp != NULL)
		return 0;
	struct record *r = wl_xmalloc(sizeof *r);
	r->next = NULL;
	r->key = key;
	r->balance = balance;
	r->version = 1;
	make_name(r->name, key);
	*pp = r;
	t->count++;
	return 1;
}

static struct record *lookup(struct table *t, uint64_t key)
{
	return *slot(t, key);
}

WL_NOINLINE
static int delete(struct table *t, uint64_t key)
{
	struct record **pp = slot(t, key);
	struct record *r = *pp;
	if (r == NULL)
		return 0;
	*pp = r->next;
	free(r);
	t->count--;
	return 1;
}

/* key_of maps a record number to its key: spread out, never zero. */
static uint64_t key_of(uint64_t i)
{
	return (i + 1) * 0x9e3779b1ULL;
}

int main(int argc, char **argv)
{
	uint64_t n = wl_arg(argc, argv, 1, 20000, 1ULL << 24);
	uint64_t ops = wl_arg(argc, argv, 2, 120000, 1ULL << 40);
	struct table t = {0};
	uint64_t hits = 0, misses = 0, updates = 0, deletes = 0, inserts = 0;
	uint64_t h = WL_SEED0;
	wl_rng r;

	/* Load factor about 1.5 so that chains are a few records long. */
	uint64_t nb = 1;
	while (nb * 3 < n * 2)
		nb <<= 1;
	t.bucket = wl_xmalloc(nb * sizeof *t.bucket);
	memset(t.bucket, 0, nb * sizeof *t.bucket);
	t.mask = nb - 1;

	wl_seed(&r, 1234);
	for (uint64_t i = 0; i < n; i++)
		insert(&t, key_of(i), wl_next32(&r) % 100000);

	for (uint64_t op = 0; op < ops; op++) {
		uint32_t kind = wl_below(&r, 100);
		/* Keys drawn from twice the loaded range: about half miss. */
		uint64_t key = key_of(wl_below(&r, (uint32_t)(2 * n)));
		if (kind < 70) {
			struct record *rec = lookup(&t, key);
			if (rec != NULL) {
				hits++;
				h = wl_mix(h, rec->balance ^ rec->version);
				h = wl_mix(h, strlen((const char *)rec->name));
			} else {
				misses++;
			}
		} else if (kind < 85) {
			struct record *rec = lookup(&t, key);
			if (rec != NULL) {
				rec->balance += 17 + (key & 255);
				rec->version++;
				updates++;
			}
		} else if (kind < 93) {
			deletes += (uint64_t)delete(&t, key);
		} else {
			inserts += (uint64_t)insert(&t, key, key & 4095);
		}
	}

	/* Walk the whole table in bucket order for the final digest. */
	uint64_t total = 0, longest = 0;
	for (uint64_t b = 0; b < nb; b++) {
		uint64_t len = 0;
		for (struct record *rec = t.bucket[b]; rec != NULL; rec = rec->next) {
			total += rec->balance;
			h = wl_mix(h, rec->key ^ rec->balance);
			len++;
		}
		if (len > longest)
			longest = len;
	}

	printf("hashdb: %" PRIu64 " records loaded, %" PRIu64
	       " operations, %" PRIu64 " buckets\n", n, ops, nb);
	printf("lookups: %" PRIu64 " hits %" PRIu64 " misses\n", hits, misses);
	printf("updates %" PRIu64 " deletes %" PRIu64 " inserts %" PRIu64 "\n",
	       updates, deletes, inserts);
	printf("final records %" PRIu64 ", balance total %" PRIu64
	       ", longest chain %" PRIu64 ", probes %" PRIu64 "\n", t.count,
	       total, longest, t.probes);
	h = wl_mix(h, t.probes);
	wl_checksum("hashdb", h);

	for (uint64_t b = 0; b < nb; b++) {
		struct record *rec = t.bucket[b];
		while (rec != NULL) {
			struct record *next = rec->next;
			free(rec);
			rec = next;
		}
	}
	free(t.bucket);
	return 0;
}
