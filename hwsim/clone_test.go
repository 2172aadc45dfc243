package hwsim

import "testing"

// TestCloneFlags: the combinations glibc uses are implemented, those the
// real kernel refuses get its EINVAL, and every other one is unimplemented
// (never an errno Linux would not give).
func TestCloneFlags(t *testing.T) {
	for _, tc := range []struct {
		flags uint64
		unimp bool
		err   errno
	}{
		{0x3d0f00, false, 0},                                        // NPTL's pthread_create
		{0x3d0f00 | cloneChildSetTID, false, 0},                     // with CHILD_SETTID
		{cloneChildSetTID | cloneChildClearTID | sigCHLD, false, 0}, // glibc's fork
		{sigCHLD, false, 0},                                         // fork, vfork
		{cloneVM | cloneVFork | sigCHLD, false, 0},                  // posix_spawn
		{cloneThread | cloneVM, false, eINVAL},                      // THREAD without SIGHAND
		{cloneSighand | sigCHLD, false, eINVAL},                     // SIGHAND without VM
		{cloneVM | sigCHLD, true, 0},                                // a process sharing memory
		{cloneVM | cloneSighand | cloneThread, true, 0},             // a thread without FS and FILES
		{0x3d0f00 | 0x20000000, true, 0},                            // CLONE_NEWUTS
		{cloneFiles | sigCHLD, true, 0},                             // a process sharing files
		{0, true, 0},                                                // no exit signal
	} {
		what, err := checkCloneFlags(tc.flags)
		if (what != "") != tc.unimp || err != tc.err {
			t.Errorf("flags %#x: unimplemented %q, errno %d; want unimplemented %v, errno %d", tc.flags, what, err, tc.unimp, tc.err)
		}
	}
}
