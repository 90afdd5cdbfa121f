// kubectl-drift's test environment builds k9s without its image vulnerability scanner: this file
// takes the place of k9s's internal/vul/scanner.go through `go build -overlay`
// (scripts/test-env, build_k9s), so that Anchore's Grype and Syft, half of k9s's packages, are not
// compiled. The scanner keeps its methods; it never initializes, so k9s shows no scan column and
// the image scan view stays empty, as when imageScans.enable is false (k9s's default).

package vul

import (
	"context"
	"log/slog"
	"sync"

	"github.com/derailed/k9s/internal/config"
)

// ImgScanner is set by k9s only when image scans are enabled in its configuration.
var ImgScanner *imageScanner

type imageScanner struct {
	scans  Scans
	mx     sync.RWMutex
	config config.ImageScans
	log    *slog.Logger
}

// NewImageScanner returns a scanner that never scans.
func NewImageScanner(cfg config.ImageScans, l *slog.Logger) *imageScanner {
	return &imageScanner{scans: make(Scans), config: cfg, log: l}
}

func (s *imageScanner) ShouldExcludes(ns string, lbls map[string]string) bool {
	return s.config.ShouldExclude(ns, lbls)
}

// GetScan has no scan to return.
func (s *imageScanner) GetScan(img string) (*Scan, bool) {
	s.mx.RLock()
	defer s.mx.RUnlock()
	scan, ok := s.scans[img]
	return scan, ok
}

// Init says that this k9s has no scanner, and leaves it uninitialized.
func (s *imageScanner) Init(string, string) {
	s.log.Warn("image scans are not built into this k9s (kubectl-drift's test environment)")
}

func (*imageScanner) Stop() {}

func (*imageScanner) Score(...string) string { return "" }

func (*imageScanner) IsInitialized() bool { return false }

func (*imageScanner) Enqueue(context.Context, ...string) {}
