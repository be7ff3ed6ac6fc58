// Package resources builds the children of a Website (its Deployment,
// Service and Ingress) as server-side apply configurations.
//
// Every function here is pure: it reads a Website and returns what its
// children should look like, without talking to an API server, so that the
// whole desired state can be table-tested and fuzzed. An apply configuration
// holds only the fields the operator owns; whatever else is on a child
// (defaults, fields of other managers) is left alone by server-side apply.
package resources
