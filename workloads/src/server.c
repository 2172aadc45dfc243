/*
 * server - the main loop of a request/response server, without the network:
 * each synthetic request is formatted into a buffer, parsed back (method,
 * path, headers, query parameters), looked up in an inventory hash table,
 * possibly updated, and answered with a response formatted by snprintf into
 * an output buffer whose bytes are checksummed. Every 128 requests it reads
 * the clocks (clock_gettime and gettimeofday), as servers do for timeouts and
 * logs; times are never printed, only whether the monotonic clock behaved.
 *
 * usage: server [requests]   (default 3000; e.g. server 1000000 runs long)
 */
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "wl.h"

#define NITEMS 4096

struct item {
	uint32_t id; /* 0 = empty slot */
	uint32_t qty;
	uint32_t hits;
	char name[24];
};

static struct item inventory[NITEMS * 2];

static uint32_t slot_of(uint32_t id)
{
	return (id * 2654435761u) >> 19; /* 13 bits: NITEMS * 2 slots */
}

WL_NOINLINE
static struct item *find(uint32_t id, int create)
{
	uint32_t s = slot_of(id);
	for (;;) {
		struct item *it = &inventory[s];
		if (it->id == id)
			return it;
		if (it->id == 0) {
			if (!create)
				return NULL;
			it->id = id;
			return it;
		}
		s = (s + 1) & (NITEMS * 2 - 1);
	}
}

/* parse_uint reads decimal digits at *p, advancing it. */
static uint32_t parse_uint(const char **p)
{
	uint32_t v = 0;
	while (**p >= '0' && **p <= '9') {
		v = v * 10 + (uint32_t)(**p - '0');
		(*p)++;
	}
	return v;
}

struct request {
	int method; /* 0 GET, 1 PUT, 2 DELETE */
	uint32_t id, qty, user;
};

/* parse understands exactly what make_request writes and rejects anything
 * else, like a strict protocol parser. */
WL_NOINLINE
static int parse(const char *buf, struct request *rq)
{
	const char *p = buf;

	if (strncmp(p, "GET ", 4) == 0) {
		rq->method = 0;
		p += 4;
	} else if (strncmp(p, "PUT ", 4) == 0) {
		rq->method = 1;
		p += 4;
	} else if (strncmp(p, "DELETE ", 7) == 0) {
		rq->method = 2;
		p += 7;
	} else {
		return -1;
	}
	if (strncmp(p, "/item/", 6) != 0)
		return -1;
	p += 6;
	rq->id = parse_uint(&p);
	rq->qty = 0;
	if (*p == '?') {
		p++;
		if (strncmp(p, "qty=", 4) != 0)
			return -1;
		p += 4;
		rq->qty = parse_uint(&p);
	}
	if (strncmp(p, " HTTP/1.0\r\n", 11) != 0)
		return -1;
	p += 11;
	rq->user = 0;
	while (strncmp(p, "\r\n", 2) != 0) {
		const char *eol = strstr(p, "\r\n");
		if (eol == NULL)
			return -1;
		if (strncmp(p, "User: ", 6) == 0) {
			const char *q = p + 6;
			rq->user = parse_uint(&q);
		}
		p = eol + 2;
	}
	return 0;
}

WL_NOINLINE
static int make_request(char *buf, size_t cap, wl_rng *r)
{
	uint32_t kind = wl_below(r, 10);
	/* Ids from 1.5 x the stocked range: some requests miss. */
	uint32_t id = 1 + wl_below(r, NITEMS + NITEMS / 2);
	uint32_t user = wl_below(r, 100000);

	if (kind < 7)
		return snprintf(buf, cap,
				"GET /item/%u HTTP/1.0\r\nHost: shop\r\n"
				"User: %u\r\nAccept: */*\r\n\r\n", id, user);
	if (kind < 9)
		return snprintf(buf, cap,
				"PUT /item/%u?qty=%u HTTP/1.0\r\nHost: shop\r\n"
				"User: %u\r\n\r\n", id, wl_below(r, 500), user);
	return snprintf(buf, cap, "DELETE /item/%u HTTP/1.0\r\nUser: %u\r\n\r\n",
			id, user);
}

int main(int argc, char **argv)
{
	uint64_t requests = wl_arg(argc, argv, 1, 3000, 1ULL << 40);
	uint64_t ok = 0, notfound = 0, created = 0, deleted = 0, bad = 0;
	uint64_t clock_reads = 0, backwards = 0, bytes = 0, h = WL_SEED0;
	struct timespec last = {0, 0};
	char req[256], resp[512];
	wl_rng r;

	wl_seed(&r, 2024);
	for (uint32_t id = 1; id <= NITEMS; id++) {
		struct item *it = find(id, 1);
		it->qty = wl_below(&r, 1000);
		snprintf(it->name, sizeof it->name, "widget-%05u", id * 7 % 99991);
	}

	printf("server: %" PRIu64 " requests\n", requests);
	for (uint64_t n = 1; n <= requests; n++) {
		struct request rq;
		int len;

		make_request(req, sizeof req, &r);
		if (parse(req, &rq) != 0) {
			bad++;
			len = snprintf(resp, sizeof resp,
				       "HTTP/1.0 400 Bad Request\r\n\r\n");
		} else {
			struct item *it = find(rq.id, rq.method == 1);
			if (it == NULL || (rq.method != 1 && it->name[0] == '\0')) {
				notfound++;
				len = snprintf(resp, sizeof resp,
					       "HTTP/1.0 404 Not Found\r\n"
					       "Content-Length: 0\r\n\r\n");
			} else if (rq.method == 2) {
				it->name[0] = '\0'; /* tombstone */
				deleted++;
				len = snprintf(resp, sizeof resp,
					       "HTTP/1.0 204 No Content\r\n\r\n");
			} else {
				if (rq.method == 1) {
					if (it->name[0] == '\0') {
						snprintf(it->name,
							 sizeof it->name,
							 "new-%u", rq.id);
						created++;
					}
					it->qty = rq.qty;
				}
				it->hits++;
				ok++;
				char body[160];
				int bl = snprintf(body, sizeof body,
						  "{\"id\":%u,\"name\":\"%s\","
						  "\"qty\":%u,\"hits\":%u,"
						  "\"user\":%u}", it->id,
						  it->name, it->qty, it->hits,
						  rq.user);
				len = snprintf(resp, sizeof resp,
					       "HTTP/1.0 200 OK\r\nContent-Type: "
					       "application/json\r\n"
					       "Content-Length: %d\r\n\r\n%s",
					       bl, body);
			}
		}
		if (len < 0 || (size_t)len >= sizeof resp)
			len = (int)sizeof resp - 1;
		for (int i = 0; i < len; i++)
			h = (h ^ (unsigned char)resp[i]) * 0x100000001b3ULL;
		bytes += (uint64_t)len;

		if (n % 128 == 0) {
			struct timespec now;
			struct timeval tv;
			clock_gettime(CLOCK_MONOTONIC, &now);
			gettimeofday(&tv, NULL);
			clock_reads += 2;
			if (now.tv_sec < last.tv_sec ||
			    (now.tv_sec == last.tv_sec &&
			     now.tv_nsec < last.tv_nsec))
				backwards++;
			if (tv.tv_usec < 0 || tv.tv_usec >= 1000000)
				backwards++;
			last = now;
		}
		if (n % 1000 == 0)
			printf("  %" PRIu64 " served: ok %" PRIu64
			       " not found %" PRIu64 " deleted %" PRIu64 "\n", n,
			       ok, notfound, deleted);
	}
	printf("ok %" PRIu64 " not found %" PRIu64 " created %" PRIu64
	       " deleted %" PRIu64 " bad %" PRIu64 "\n", ok, notfound, created,
	       deleted, bad);
	printf("response bytes %" PRIu64 ", clock reads %" PRIu64
	       ", clock anomalies %" PRIu64 "\n", bytes, clock_reads, backwards);
	wl_checksum("server", h);
	return 0;
}
