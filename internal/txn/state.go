package txn

import "fmt"

// State is a transaction's state, numbered as Kafka numbers it in
// __transaction_state (TransactionStatus).
type State int8

// The transaction states.
const (
	Empty             State = 0
	Ongoing           State = 1
	PrepareCommit     State = 2
	PrepareAbort      State = 3
	CompleteCommit    State = 4
	CompleteAbort     State = 5
	Dead              State = 6
	PrepareEpochFence State = 7
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort",
	"CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

// String returns Kafka's name of the state (as DescribeTransactions and
// ListTransactions report it).
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int8(s))
}

// ParseState returns the state named name (Kafka's exact, case-sensitive
// names).
func ParseState(name string) (State, bool) {
	for i, n := range stateNames {
		if n == name {
			return State(i), true
		}
	}
	return 0, false
}

// valid reports whether s is a known state id.
func (s State) valid() bool { return s >= 0 && int(s) < len(stateNames) }

// expirable states are those in which an idle transactional id may be
// forgotten (Kafka's isExpirationAllowed).
func (s State) expirable() bool { return s == Empty || s == CompleteCommit || s == CompleteAbort }

// validPrevious lists, per target state, the states it may be reached from
// (Kafka's validPreviousStates).
var validPrevious = map[State][]State{
	Empty:             {Empty, CompleteCommit, CompleteAbort},
	Ongoing:           {Ongoing, Empty, CompleteCommit, CompleteAbort},
	PrepareCommit:     {Ongoing},
	PrepareAbort:      {Ongoing, PrepareEpochFence, Empty, CompleteCommit, CompleteAbort}, // the last three: TV2's abort of an empty transaction
	CompleteCommit:    {PrepareCommit},
	CompleteAbort:     {PrepareAbort},
	Dead:              {Empty, CompleteAbort, CompleteCommit},
	PrepareEpochFence: {Ongoing},
}

func canTransition(from, to State) bool {
	for _, s := range validPrevious[to] {
		if s == from {
			return true
		}
	}
	return false
}
