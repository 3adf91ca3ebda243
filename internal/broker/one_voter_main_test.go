package broker

import (
	"os"
	"testing"
)

// TestMain runs the package's tests with the implicit one-voter quorum as
// the default when SLUICE_TEST_ONE_VOTER=1 (cluster_implicit.go).
func TestMain(m *testing.M) {
	if os.Getenv("SLUICE_TEST_ONE_VOTER") == "1" {
		oneVoterQuorumDefault = true
	}
	os.Exit(m.Run())
}
