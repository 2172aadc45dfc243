package simhost

import (
	"bufio"
	"fmt"
	"os"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
)

// ReadGroundTruthFile reads a ground truth file (dcpi profile --truth;
// hwsim.ReadGroundTruth), naming it in its errors as ReadValueTruthFile
// does: dcpi calc --truth holds its estimates to it.
func ReadGroundTruthFile(name string) (map[string]*alpha.GroundTruth, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("--truth: %w", err)
	}
	defer f.Close()
	t, err := hwsim.ReadGroundTruth(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("--truth %s: %w", name, err)
	}
	return t, nil
}
