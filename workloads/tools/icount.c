/*
 * icount.c - a qemu TCG plugin that counts guest instructions, used by
 * `make icount` to measure the workloads' default sizes under qemu-alpha.
 *
 *   gcc -O2 -shared -fPIC -o icount.so tools/icount.c
 *   qemu-alpha -d plugin -plugin ./icount.so bin/stream
 *
 * It prints "icount N" at exit, once per process (a forked child counts its
 * own instructions). Each translation block adds its length when it starts,
 * so a block left early by a trap is over-counted a little: an estimate.
 *
 * qemu's plugin header is not packaged, so the few declarations used (the
 * stable C ABI of plugin API version 1, qemu 4.2 to 8.x) are written here.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t;
struct qemu_plugin_tb;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };

void qemu_plugin_register_vcpu_tb_trans_cb(
    qemu_plugin_id_t id, void (*cb)(qemu_plugin_id_t, struct qemu_plugin_tb *));
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb,
					      enum qemu_plugin_op op, void *ptr,
					      uint64_t imm);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id,
				    void (*cb)(qemu_plugin_id_t, void *),
				    void *userdata);
void qemu_plugin_outs(const char *string);

#define EXPORT __attribute__((visibility("default")))

EXPORT int qemu_plugin_version = 1;

static uint64_t executed;

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	(void)id;
	qemu_plugin_register_vcpu_tb_exec_inline(
	    tb, QEMU_PLUGIN_INLINE_ADD_U64, &executed,
	    qemu_plugin_tb_n_insns(tb));
}

static void on_exit(qemu_plugin_id_t id, void *unused)
{
	char line[64];
	(void)id;
	(void)unused;
	snprintf(line, sizeof line, "icount %llu\n",
		 (unsigned long long)executed);
	qemu_plugin_outs(line);
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
			       int argc, char **argv)
{
	(void)info;
	(void)argc;
	(void)argv;
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, on_exit, NULL);
	return 0;
}
