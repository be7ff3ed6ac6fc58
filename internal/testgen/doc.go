// Package testgen holds what the tests of every kind share: the refusal of
// a write by the operator's admission policy, and the operator's counters
// for tests that count its work. A kind's own fixtures live beside its
// controller (website/websitetest).
package testgen
