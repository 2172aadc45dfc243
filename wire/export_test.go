package wire

// What the external tests (package wire_test, which may import wiretest)
// need of the internal ones: fixtures and the frame's layout.
var (
	SampleBatch  = sampleBatch
	SampleRecord = sampleRecord
	KeyA, KeyB   = keyA, keyB
	Reseal       = reseal
)

const HeaderLen, TrailerLen = headerLen, trailerLen
