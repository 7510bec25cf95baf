//go:build tools

// The command this module builds, listed so that `go mod tidy` pins what it needs.
package tools

import _ "github.com/prometheus/prometheus/cmd/promtool"
