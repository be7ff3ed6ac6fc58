// Package view renders what kubectl-platform shows: pure functions from the
// objects as read to text, so that what a person sees is table-tested
// without an API server. Every line fits 80 columns but for values that
// cannot be cut (a long name), and times are shown relative to a given
// now, so that a test can fix it.
package view
