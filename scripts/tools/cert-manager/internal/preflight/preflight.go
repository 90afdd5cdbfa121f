// Package preflight holds the start-up checks both mains make: a loopback listen address, and an
// API server that answers and serves the cert-manager CRDs.
package preflight

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/cert-manager/cert-manager/pkg/util"
)

// Loopback accepts HOST:PORT with a loopback HOST (an IP, or "localhost") and a port: the servers
// of the test environment never listen on every interface.
func Loopback(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return fmt.Errorf("want 127.0.0.1:PORT, got %q", addr)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("%q is not a loopback address (want 127.0.0.1:PORT)", addr)
	}
	return nil
}

// WaitForCRDs waits up to timeout for the API server of cfg to answer and to serve every one of
// resources (plural names) in cert-manager.io/v1: CRDs just created can take a moment to be
// discovered. The error says which was missing at the end.
func WaitForCRDs(ctx context.Context, cfg *rest.Config, timeout time.Duration, resources ...string) error {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 5 * time.Second
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating the discovery client: %w", err)
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		if _, err := dc.ServerVersion(); err != nil {
			last = fmt.Errorf("the API server %s does not answer: %w", cfg.Host, err)
			return false, nil
		}
		list, err := dc.ServerResourcesForGroupVersion("cert-manager.io/v1")
		if err != nil && !apierrors.IsNotFound(err) {
			last = fmt.Errorf("discovering cert-manager.io/v1 on %s: %w", cfg.Host, err)
			return false, nil
		}
		served := map[string]bool{}
		if list != nil {
			for _, r := range list.APIResources {
				served[r.Name] = true
			}
		}
		var missing []string
		for _, want := range resources {
			if !served[want] {
				missing = append(missing, want+".cert-manager.io")
			}
		}
		if len(missing) > 0 {
			last = fmt.Errorf("the cert-manager CRDs are not installed on %s (missing %s; apply deploy/crds/*.yaml of github.com/cert-manager/cert-manager@%s)",
				cfg.Host, strings.Join(missing, ", "), util.AppVersion)
			return false, nil
		}
		return true, nil
	})
	if err != nil && last != nil && ctx.Err() == nil {
		return fmt.Errorf("%w (gave up after %s)", last, timeout)
	}
	return err
}
