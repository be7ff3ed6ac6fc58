//go:build tools

// Package tools pins kwok, which simulates nodes and pods for the local
// control plane.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
