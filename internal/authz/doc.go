// Package authz is Sluice's authorizer: ACL bindings with the semantics of
// Apache Kafka's StandardAuthorizer, the filters of DescribeAcls and
// DeleteAcls, and the audit of denials.
//
// # Semantics
//
// A request is described by a principal ("User:alice"), the client's host
// (an IP address), an operation and a resource (type and name). It is
// allowed when the principal is a super user (super.users); otherwise the
// bindings whose resource pattern matches the resource are considered: a
// LITERAL pattern matches its own name and the wildcard name "*", a PREFIXED
// pattern every name starting with it. Among those, a binding applies when
// its principal is the request's principal or the wildcard "User:*" (which,
// as in Kafka, matches principals of any type), its
// host is the request's host or "*", and its operation is the requested one
// or ALL; an ALLOW binding also applies to DESCRIBE when it grants READ,
// WRITE, DELETE or ALTER, and to DESCRIBE_CONFIGS when it grants
// ALTER_CONFIGS. Any applying DENY denies; else any applying ALLOW allows;
// else, when no binding at all matches the resource pattern (whatever its
// principal), allow.everyone.if.no.acl.found decides, and otherwise the
// request is denied.
//
// # State and how it changes
//
// An Authorizer answers from an immutable snapshot of the bindings, read
// through an atomic pointer: checks never take a lock. Every change goes
// through Apply, which takes a batch of additions and removals, computes the
// next set, hands it to the Store (if any) and only then publishes the new
// snapshot. A failed Store leaves the old snapshot in place.
//
// On a single node the Store is a FileStore: the whole set, as JSON, in
// acls.json of the data directory, replaced atomically through
// vfs.WriteFileAtomic (like the SCRAM credentials).
//
// In a cluster, the durable copy is the metadata log instead: the
// controller validates CreateAcls/DeleteAcls, commits one record per added
// or removed binding, and every node replays committed records into its own
// Authorizer with Apply (built with a nil Store: the log is the durable
// state), in log order, as one batch per committed entry; a metadata
// snapshot is loaded with Replace. Nothing in this package depends on where
// the changes come from.
package authz
