//go:build tools

// The commands this module builds, listed so that `go mod tidy` pins what they need.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
