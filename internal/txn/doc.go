// Package txn is Sluice's transaction coordinator: the state of every
// transactional id (Apache Kafka's TransactionCoordinator and
// TransactionStateManager, for one node).
//
// It owns: the per-transactional-id state machine (Empty, Ongoing,
// PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, Dead,
// PrepareEpochFence) with Kafka's transitions and error codes; producer id
// and epoch assignment for transactional producers (epoch bumps, fencing of
// the previous producer, KIP-360 recovery, producer id rotation when the
// epoch is exhausted); the set of partitions each transaction touched;
// completing a transaction by writing commit/abort markers to every one of
// them; the durable form of all of it in the compacted __transaction_state
// topic in Kafka's own record formats (TransactionLogKey v0,
// TransactionLogValue v0), replayed by Start; aborting transactions that
// outlive their timeout and forgetting idle transactional ids.
//
// It must not touch: sockets, request framing, partition logs or their
// producer state. The broker hands it plain arguments and gets Kafka error
// codes back; __transaction_state goes through the Storage interface,
// markers and partition facts through the Partitions interface, producer
// ids come from an IDSource — all implemented by the broker.
//
// Concurrency follows Kafka's: a coordinator-wide mutex guards the map of
// transactional ids, each id has its own mutex, and a transition is
// prepared under that mutex (marking the id pending), written to storage
// without it, then completed. Requests that find an id pending, or a
// transaction being completed, get CONCURRENT_TRANSACTIONS and retry.
// Markers are written synchronously by EndTxn before it answers (stricter
// than Kafka, which answers once the decision is durable); a marker that
// cannot be written is retried by the periodic sweep. A transactional append
// admitted by BeginProduce holds its transaction's markers back until it is
// released, so that no batch lands after the marker ending its transaction.
package txn
