// Package plugin is kubectl-platform, the kubectl plugin of the operator's
// kinds: commands that read their status in one screen and make the
// changes the operator supports (a switchover, a fence, a backup now) as
// ordinary API writes with the user's own credentials, so that RBAC and
// admission judge them as they would a kubectl patch. Each write is a
// merge patch of the one field it changes (under optimistic locking where
// the field is a list others may change), with the field manager
// kubectl-platform, so that it never clobbers another writer's fields.
//
// What it shows is rendered by package view; the decisions it makes before
// writing (which replica to switch over to, the fenced list after a fence)
// are pure functions here, table-tested.
package plugin
