//go:build tools

// The commands this module builds, listed so that `go mod tidy` pins what they need.
package tools

import (
	_ "github.com/crossplane/crossplane/v2/cmd/crank"
	_ "github.com/crossplane/crossplane/v2/cmd/crossplane"
	_ "github.com/google/go-containerregistry/cmd/crane"
)
