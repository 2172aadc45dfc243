package alpha

// Op is an instruction's operation after decoding: one value per distinct
// behaviour the interpreter implements, so the interpreter's switch is a
// single dense jump table.
type Op uint16

// Operations. The order groups formats; nothing depends on the numbering
// except that OpInvalid is zero, so a zeroed Decoded is never executable.
const (
	OpInvalid Op = iota // reserved or privileged opcode, or a missing extension: SIGILL
	OpUnimpl            // a real instruction hwsim does not implement: a clean fault

	// PAL calls (CALL_PAL, opcode 0x00).
	OpCallPal

	// Memory format, integer.
	OpLDA
	OpLDAH
	OpLDBU
	OpLDWU
	OpLDL
	OpLDQ
	OpLDQU
	OpLDLL
	OpLDQL
	OpSTB
	OpSTW
	OpSTL
	OpSTQ
	OpSTQU
	OpSTLC
	OpSTQC

	// Memory format, floating point.
	OpLDF
	OpLDG
	OpLDS
	OpLDT
	OpSTF
	OpSTG
	OpSTS
	OpSTT

	// Miscellaneous (opcode 0x18).
	OpTRAPB
	OpEXCB
	OpMB
	OpWMB
	OpFETCH
	OpRPCC
	OpRC
	OpRS
	OpECB
	OpWH64

	// Jumps (opcode 0x1A): JMP, JSR, RET, JSR_COROUTINE behave alike.
	OpJMP

	// Branches.
	OpBR // BR and BSR
	OpBEQ
	OpBNE
	OpBLT
	OpBLE
	OpBGT
	OpBGE
	OpBLBC
	OpBLBS
	OpFBEQ
	OpFBNE
	OpFBLT
	OpFBLE
	OpFBGT
	OpFBGE

	// Integer arithmetic (0x10).
	OpADDL
	OpS4ADDL
	OpS8ADDL
	OpSUBL
	OpS4SUBL
	OpS8SUBL
	OpADDQ
	OpS4ADDQ
	OpS8ADDQ
	OpSUBQ
	OpS4SUBQ
	OpS8SUBQ
	OpADDLV
	OpSUBLV
	OpADDQV
	OpSUBQV
	OpCMPEQ
	OpCMPLT
	OpCMPLE
	OpCMPULT
	OpCMPULE
	OpCMPBGE

	// Logical and conditional move (0x11).
	OpAND
	OpBIC
	OpBIS
	OpORNOT
	OpXOR
	OpEQV
	OpCMOVLBS
	OpCMOVLBC
	OpCMOVEQ
	OpCMOVNE
	OpCMOVLT
	OpCMOVGE
	OpCMOVLE
	OpCMOVGT
	OpAMASK
	OpIMPLVER

	// Shifts and byte manipulation (0x12).
	OpSLL
	OpSRL
	OpSRA
	OpEXTBL
	OpEXTWL
	OpEXTLL
	OpEXTQL
	OpEXTWH
	OpEXTLH
	OpEXTQH
	OpINSBL
	OpINSWL
	OpINSLL
	OpINSQL
	OpINSWH
	OpINSLH
	OpINSQH
	OpMSKBL
	OpMSKWL
	OpMSKLL
	OpMSKQL
	OpMSKWH
	OpMSKLH
	OpMSKQH
	OpZAP
	OpZAPNOT

	// Multiply (0x13).
	OpMULL
	OpMULQ
	OpUMULH
	OpMULLV
	OpMULQV

	// Integer-to-FP moves and square roots (0x14, FIX).
	OpITOFS
	OpITOFF
	OpITOFT
	OpSQRTS
	OpSQRTT

	// IEEE floating point (0x16).
	OpADDS
	OpSUBS
	OpMULS
	OpDIVS
	OpADDT
	OpSUBT
	OpMULT
	OpDIVT
	OpCMPTUN
	OpCMPTEQ
	OpCMPTLT
	OpCMPTLE
	OpCVTTS
	OpCVTTQ
	OpCVTQS
	OpCVTQT
	OpCVTST

	// FP operate, datatype independent (0x17).
	OpCVTLQ
	OpCVTQL
	OpCPYS
	OpCPYSN
	OpCPYSE
	OpMTFPCR
	OpMFFPCR
	OpFCMOVEQ
	OpFCMOVNE
	OpFCMOVLT
	OpFCMOVGE
	OpFCMOVLE
	OpFCMOVGT

	// Extensions in opcode 0x1C: BWX, CIX, MVI, FIX.
	OpSEXTB
	OpSEXTW
	OpCTPOP
	OpCTLZ
	OpCTTZ
	OpPERR
	OpUNPKBW
	OpUNPKBL
	OpPKWB
	OpPKLB
	OpMINSB8
	OpMINSW4
	OpMINUB8
	OpMINUW4
	OpMAXUB8
	OpMAXUW4
	OpMAXSB8
	OpMAXSW4
	OpFTOIT
	OpFTOIS

	numOps
)
