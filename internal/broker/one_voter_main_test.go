package broker

import (
	"os"
	"testing"
)

// TestMain runs the package's tests with the implicit one-voter quorum as
// the default (SLUICE_TEST_ONE_VOTER=1) or with the single-node path as the
// default (SLUICE_TEST_ONE_VOTER=0) for a configuration that does not set
// sluice.one.voter.quorum (cluster_implicit.go); unset, the built-in default.
func TestMain(m *testing.M) {
	switch os.Getenv("SLUICE_TEST_ONE_VOTER") {
	case "1":
		oneVoterQuorumDefault = true
	case "0":
		oneVoterQuorumDefault = false
	}
	os.Exit(m.Run())
}
