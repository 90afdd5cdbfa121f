// Wrapper module: the test environment's Git server for the Flux controllers (our own main around
// gitkit v0.6.0, the server in github.com/fluxcd/pkg/gittestserver v0.25.0).
module kubectl-drift.local/tools/flux-git

go 1.25.0

require github.com/fluxcd/gitkit v0.6.0

require (
	github.com/gofrs/uuid v4.2.0+incompatible // indirect
	golang.org/x/crypto v0.47.0 // indirect
	golang.org/x/sys v0.40.0 // indirect
)
