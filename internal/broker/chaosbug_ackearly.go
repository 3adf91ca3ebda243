//go:build chaosbug_ackearly

package broker

// chaosBugAckEarly, in a build with the chaosbug_ackearly tag only, is a
// deliberate bug for the fault checker's self-test (test/chaos): the leader
// answers acks=all produce requests without waiting for the in-sync
// replicas, so that a leader lost just after answering loses acknowledged
// writes. Never in the default build.
const chaosBugAckEarly = true
