//go:build tools

// The KWOK command this module builds (`go build sigs.k8s.io/kwok/cmd/kwok`), kept in go.mod.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
