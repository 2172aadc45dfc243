/*
 * entry.S - vmunix's kernel entry points: system calls (entSys) and
 * interrupts (entInt). hwsim's PALcode emulation enters them in kernel mode
 * with sp at the top of this CPU's kernel stack; they save the interrupted
 * context as Linux/Alpha's SAVE_ALL does, call into C, restore it, and
 * return with retsys or rti.
 */
#define FRAME 256

	.set noreorder
	.set noat
	.text

#define SAVE_ALL \
	lda	$sp, -FRAME($sp); \
	stq	$0, 0($sp);   stq	$1, 8($sp);   stq	$2, 16($sp);  stq	$3, 24($sp); \
	stq	$4, 32($sp);  stq	$5, 40($sp);  stq	$6, 48($sp);  stq	$7, 56($sp); \
	stq	$8, 64($sp);  stq	$9, 72($sp);  stq	$10, 80($sp); stq	$11, 88($sp); \
	stq	$12, 96($sp); stq	$13, 104($sp); stq	$14, 112($sp); stq	$15, 120($sp); \
	stq	$16, 128($sp); stq	$17, 136($sp); stq	$18, 144($sp); stq	$19, 152($sp); \
	stq	$20, 160($sp); stq	$21, 168($sp); stq	$22, 176($sp); stq	$23, 184($sp); \
	stq	$24, 192($sp); stq	$25, 200($sp); stq	$26, 208($sp); stq	$27, 216($sp); \
	stq	$28, 224($sp); stq	$29, 232($sp)

#define RESTORE_ALL \
	ldq	$0, 0($sp);   ldq	$1, 8($sp);   ldq	$2, 16($sp);  ldq	$3, 24($sp); \
	ldq	$4, 32($sp);  ldq	$5, 40($sp);  ldq	$6, 48($sp);  ldq	$7, 56($sp); \
	ldq	$8, 64($sp);  ldq	$9, 72($sp);  ldq	$10, 80($sp); ldq	$11, 88($sp); \
	ldq	$12, 96($sp); ldq	$13, 104($sp); ldq	$14, 112($sp); ldq	$15, 120($sp); \
	ldq	$16, 128($sp); ldq	$17, 136($sp); ldq	$18, 144($sp); ldq	$19, 152($sp); \
	ldq	$20, 160($sp); ldq	$21, 168($sp); ldq	$22, 176($sp); ldq	$23, 184($sp); \
	ldq	$24, 192($sp); ldq	$25, 200($sp); ldq	$26, 208($sp); ldq	$27, 216($sp); \
	ldq	$28, 224($sp); ldq	$29, 232($sp); \
	lda	$sp, FRAME($sp)

/* entSys: v0 holds the system call number, a0-a5 its arguments. */
	.globl	entSys
	.ent	entSys
entSys:
	SAVE_ALL
	br	$29, 1f
1:	ldgp	$29, 0($29)
	mov	$sp, $16
	jsr	$26, syscall_dispatch
	ldgp	$29, 0($26)
	RESTORE_ALL
	call_pal 0x3d		/* retsys */
	.end	entSys

/* entInt: a0 holds the interrupt type (1 = clock), a1 whether it
 * interrupted user mode. */
	.globl	entInt
	.ent	entInt
entInt:
	SAVE_ALL
	br	$29, 1f
1:	ldgp	$29, 0($29)
	jsr	$26, do_entInt
	ldgp	$29, 0($26)
	RESTORE_ALL
	call_pal 0x3f		/* rti */
	.end	entInt

/* entMM: a0 holds the faulting address of a user access to a page not
 * yet present. */
	.globl	entMM
	.ent	entMM
entMM:
	SAVE_ALL
	br	$29, 1f
1:	ldgp	$29, 0($29)
	jsr	$26, do_page_fault
	ldgp	$29, 0($26)
	RESTORE_ALL
	call_pal 0x3f		/* rti */
	.end	entMM

	.section .note.GNU-stack,"",@progbits
