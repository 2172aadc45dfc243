/*
 * hello - the smallest useful glibc program: printf to stdout, a line to
 * stderr, and a malloc/free pair. For a first test of a loader and the
 * system calls of glibc start-up and exit.
 *
 * usage: hello [repeats]   (default 1)
 */
#include <string.h>

#include "wl.h"

int main(int argc, char **argv)
{
	uint64_t repeats = wl_arg(argc, argv, 1, 1, 1000000);
	uint64_t h = WL_SEED0;

	fprintf(stderr, "hello: this line goes to stderr\n");
	for (uint64_t i = 0; i < repeats; i++) {
		char *msg = wl_xmalloc(64);
		strcpy(msg, "hello, world from a simulated Alpha");
		if (i == 0)
			printf("%s\n", msg);
		for (size_t j = 0; msg[j] != '\0'; j++)
			h = wl_mix(h, (unsigned char)msg[j]);
		free(msg);
	}
	printf("repeats %" PRIu64 "\n", repeats);
	wl_checksum("hello", h);
	return 0;
}
