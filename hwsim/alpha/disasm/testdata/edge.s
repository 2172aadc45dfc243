# Layout corner cases of objdump -d: data objects in a code section, runs
# of zero bytes (skipped as "..." from 8 bytes on, fewer printed as halt),
# several symbols at one address, a symbol that is not 4-byte aligned, and
# a section whose size is not a multiple of 4.
	.set noreorder
	.set noat
	.text
	.globl start
	.type start,@function
start:
	nop
	.long 0
	nop
	.long 0,0
	nop
	.long 0,0,0
	.type msg,@object
	.size msg,23
msg:	.ascii "hello, world 123456789\n"
	.byte 0
	.align 2
	.globl alias1
	.globl alias2
	.type alias2,@function
alias1:
alias2:
local:
	br $31,start
	bsr $26,alias2
	.long 0,0
odd = . + 2
	.globl odd
	.long 0x47ff041f, 0x47ff041f
	.long 0,0,0,0
	.section .text.tail,"ax",@progbits
tail:	nop
	.byte 1,2
