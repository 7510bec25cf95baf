//go:build tools

// The commands this module builds from published modules, listed so that
// `go mod tidy` pins what they need (ours are under cmd/).
package tools

import (
	_ "github.com/coredns/coredns/coremain"
)
