/* bwx uses byte loads and stores (BWX, 21164A and later). */
#include <stdio.h>
int main(void) {
	static volatile unsigned char buf[64];
	unsigned sum = 0;
	for (int i = 0; i < 64; i++) buf[i] = (unsigned char)(i * 7);
	for (int i = 0; i < 64; i++) sum += buf[i];
	printf("bwx sum %u\n", sum);
	return 0;
}
