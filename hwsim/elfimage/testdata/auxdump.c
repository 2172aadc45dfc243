// auxdump.c: a static glibc program for the elfimage tests. It prints what
// it found on its initial stack (argc, argv, envp, every auxv entry in order,
// the strings AT_PLATFORM and AT_EXECFN name, the AT_RANDOM bytes) and what
// getauxval returns, one "key value" per line, so a test can compare the
// stack qemu-alpha (or the simulator) built with BuildStack's.
#include <elf.h>
#include <stdio.h>
#include <sys/auxv.h>

int main(int argc, char **argv, char **envp) {
	printf("argc %d\n", argc);
	for (int i = 0; i < argc; i++)
		printf("argv %s\n", argv[i]);
	char **e = envp;
	for (; *e; e++)
		printf("envp %s\n", *e);
	for (Elf64_auxv_t *a = (Elf64_auxv_t *)(e + 1);; a++) {
		printf("aux %lu 0x%lx\n", a->a_type, a->a_un.a_val);
		if (a->a_type == AT_PLATFORM || a->a_type == AT_EXECFN)
			printf("auxstr %lu %s\n", a->a_type, (char *)a->a_un.a_val);
		if (a->a_type == AT_RANDOM) {
			unsigned char *r = (unsigned char *)a->a_un.a_val;
			printf("random ");
			for (int i = 0; i < 16; i++)
				printf("%02x", r[i]);
			printf("\n");
		}
		if (a->a_type == AT_NULL)
			break;
	}
	printf("getauxval_pagesz %lu\n", getauxval(AT_PAGESZ));
	printf("getauxval_phnum %lu\n", getauxval(AT_PHNUM));
	return 0;
}
