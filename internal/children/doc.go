// Package children creates, updates, observes and prunes the objects that
// the operator's resources own, the same way for every kind (Website,
// Tenant, BackupJob, PostgresCluster).
//
// The rules, in the order a child meets them:
//
//   - A child that does not exist is made with a create call, never with an
//     apply, so that an object someone else made in the meantime is refused
//     (AlreadyExists) and reported as a conflict instead of being adopted.
//     Adoption happens only where the caller opts in (AdoptIf).
//   - A child that exists is ours when it is controlled by the owner (or,
//     for children that hold user data and carry no owner reference, when
//     the caller's OwnedBy says so). Anything else is a conflict and is never
//     written.
//   - A child of ours is compared with its desired state using the API
//     server's own merge semantics, from the types' structured-merge-diff
//     schema: atomic maps and lists (selectors, port lists, Ingress rules)
//     compare whole, granular ones by key, and values are normalized the way
//     the API server stores them (an empty env value is no value). Fields the
//     operator does not set are left alone. A hash of the desired state,
//     kept in an annotation, catches fields the operator stops setting. A
//     child found equal is not compared again while its generation (its
//     resourceVersion, for kinds without one) and the metadata the operator
//     sets hold; a child that carries the desired hash at generation 1 has
//     not changed since the operator created it and is not compared at all,
//     which spares a restarted operator a comparison (and, for a partially
//     cached child, a read) of every such child.
//   - A child that differs is updated with server-side apply under one field
//     manager, forced. Before the first apply, the field ownership that the
//     create recorded (an Update entry) is converted into an Apply entry
//     (k8s.io/client-go/util/csaupgrade), so that a field the operator stops
//     setting is removed from the child.
//   - When an apply is refused as invalid, a dry-run create of the desired
//     state tells whether the spec itself is at fault (Invalid, not retried)
//     or what someone else put into the child (a port edited by hand): then
//     the fields other managers own in the child's spec are dropped and the
//     child is replaced, with a Warning event.
//   - Prune deletes, by label, the children of an owner that are no longer
//     desired; an object that does not carry the operator's label and the
//     owner's controller reference is never deleted.
//
// Every write is counted in platform_operator_child_writes_total, every
// read past the cache in platform_operator_child_reads_total.
package children
