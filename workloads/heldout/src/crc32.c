/*
 * crc32 - MiBench's telecomm CRC32 kernel (Guthaus et al., WWC 2001; the
 * table-driven CRC-32 of Gary S. Brown, public domain) over a buffer of
 * pseudo-random bytes, repeated. Held out (docs/dcpicalc.md).
 *
 * usage: crc32 [kilobytes [passes]]   (default 64 24)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static uint32_t table[256];

static void make_table(void)
{
	for (uint32_t n = 0; n < 256; n++) {
		uint32_t c = n;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		table[n] = c;
	}
}

__attribute__((noinline)) static uint32_t crc32_buf(const unsigned char *p, size_t n, uint32_t crc)
{
	crc = ~crc;
	while (n-- > 0)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

int main(int argc, char **argv)
{
	size_t kb = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
	int passes = argc > 2 ? atoi(argv[2]) : 24;
	size_t n = kb * 1024;
	unsigned char *buf = malloc(n);
	uint64_t s = 0x2545f4914f6cdd1dULL;

	if (buf == NULL)
		return 1;
	for (size_t i = 0; i < n; i++) {
		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		buf[i] = (unsigned char)(s >> 56);
	}
	make_table();
	uint32_t crc = 0;
	for (int r = 0; r < passes; r++)
		crc = crc32_buf(buf, n, crc);
	printf("crc32 %zu KB x %d\ncrc32 checksum %016" PRIx64 "\n", kb, passes, (uint64_t)crc);
	free(buf);
	return 0;
}
