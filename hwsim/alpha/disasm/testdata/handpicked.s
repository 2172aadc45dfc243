# Hand-picked Alpha instructions: every format, pseudo-op and qualifier
# family. handpicked.o is this file assembled by alpha-linux-gnu-as, and
# handpicked.objdump is alpha-linux-gnu-objdump -d of it; objdump_test.go
# regenerates both with -update.
	.set noreorder
	.set noat
	.set nomacro
	.text
	.arch ev6
	call_pal 0
	call_pal 2
	bpt
	bugchk
	callsys
	imb
	rduniq
	wruniq
	gentrap
	call_pal 0x3f
	call_pal 0x1234
	lda $1,8($2)
	lda $1,-8($31)
	ldah $29,1($27)
	ldah $1,-1($31)
	ldbu $1,0($2)
	unop
	.long 0x2fe1ffff
	ldq_u $1,7($2)
	ldwu $1,2($2)
	stw $1,2($2)
	stb $1,1($2)
	stq_u $1,0($2)
	addl $31,$1,$2
	addl $31,7,$2
	addl $1,$2,$3
	addl $1,255,$3
	s4addl $1,$2,$3
	subl $31,$1,$2
	subl $31,1,$2
	subl $1,$2,$3
	cmpbge $31,$1,$2
	subq $31,$1,$2
	subq $1,$2,$3
	addq/v $1,$2,$3
	subq/v $31,$2,$3
	subl/v $31,$2,$3
	cmpule $1,0x80,$2
	and $1,$2,$3
	bic $1,$2,$3
	bis $31,$31,$31
	bis $31,$31,$5
	bis $31,$6,$5
	bis $6,$6,$5
	bis $31,200,$5
	bis $1,$2,$3
	bis $1,3,$3
	ornot $31,$1,$2
	ornot $31,1,$2
	ornot $1,$2,$3
	eqv $1,$2,$3
	cmoveq $1,$2,$3
	cmovlbs $1,9,$3
	amask $1,$0
	amask 3,$0
	implver $0
	.long 0x47e03d81
	extql $1,$2,$3
	insbl $1,7,$3
	sll $1,63,$3
	sra $1,$2,$3
	zapnot $1,0xf,$3
	mskqh $1,$2,$3
	mull $1,$2,$3
	mulq/v $1,9,$3
	umulh $1,$2,$3
	itofs $1,$f2
	itoft $1,$f2
	sqrtt/sui $f1,$f2
	sqrts $f1,$f2
	sqrtg $f1,$f2
	addt $f1,$f2,$f3
	addt/sui $f1,$f2,$f3
	subt $f31,$f2,$f3
	subt/su $f31,$f2,$f3
	subt/c $f31,$f2,$f3
	mult/d $f1,$f2,$f3
	divs/suic $f1,$f2,$f3
	cmptlt $f1,$f2,$f3
	cmpteq/su $f1,$f2,$f3
	cvttq/svc $f2,$f3
	cvttq/svm $f2,$f3
	cvtqt $f2,$f3
	cvtqs/sui $f2,$f3
	cvtts/sud $f2,$f3
	cvtst $f2,$f3
	cvtst/s $f2,$f3
	addf $f1,$f2,$f3
	subg $f31,$f2,$f3
	subf/s $f31,$f2,$f3
	cvtgq/svc $f2,$f3
	cmpgle/s $f1,$f2,$f3
	cvtqf/c $f2,$f3
	cvtlq $f2,$f3
	cpys $f31,$f31,$f31
	cpys $f31,$f31,$f4
	cpys $f31,$f2,$f4
	cpys $f2,$f2,$f4
	cpys $f1,$f2,$f4
	cpysn $f2,$f2,$f4
	cpysn $f1,$f2,$f4
	cpyse $f1,$f2,$f4
	mt_fpcr $f0
	mf_fpcr $f0
	.long 0x5c010480
	fcmovne $f1,$f2,$f3
	cvtql/sv $f2,$f3
	trapb
	excb
	mb
	wmb
	fetch ($1)
	fetch_m ($1)
	rpcc $1
	rpcc $1,$2
	rc $1
	rs $1
	ecb ($1)
	wh64 ($1)
	wh64en ($1)
	.long 0x63ff0001
	.long 0x64000000
	jmp $31,($27),0
	.long 0x6bfb0000
	jmp $31,($27),l2
	jsr $26,($27),l1
	jsr $26,($27),0
	ret $31,($26),1
	ret $31,($26),0
	ret $1,($2),2
	jsr_coroutine $1,($2),1
	.long 0x6c000000
	sextb $1,$2
	sextw $1,$2
	ctpop $1,$2
	ctlz $1,$2
	cttz $1,$2
	perr $1,$2,$3
	unpkbw $1,$2
	pklb $1,$2
	minsb8 $1,$2,$3
	maxuw4 $1,7,$3
	ftoit $f1,$2
	ftois $f1,$2
	.long 0x70000000
	.long 0x78000000
	.long 0x7c000000
	ldf $f1,8($2)
	ldg $f1,8($2)
	lds $f1,8($2)
	ldt $f1,-8($30)
	stf $f1,8($2)
	stg $f1,8($2)
	sts $f1,8($2)
	stt $f1,8($2)
	ldl $1,8($2)
	ldq $1,32767($2)
	ldl_l $1,8($2)
	ldq_l $1,-32768($2)
	stl $1,8($2)
	stq $1,8($31)
	stl_c $1,8($2)
	stq_c $1,8($2)
l1:	br l1
	br $26,l2
	fbeq $f1,l1
	fblt $f1,l2
	fble $f1,l1
	bsr $26,l2
	fbne $f1,l1
	fbge $f1,l1
	fbgt $f1,l1
	blbc $1,l1
	beq $1,l1
	blt $1,l2
	ble $1,l1
	blbs $1,l1
	bne $1,l1
	bge $1,l1
	bgt $1,l2
	.long 0x04000000
	.long 0x1c000000|0x40<<5
	.long 0x40000000|0x7f<<5
l2:	.long 0x58000000|0x7ff<<5
