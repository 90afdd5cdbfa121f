// cert-manager-controller: the test environment's cert-manager controller (scripts/test-env).
//
// Upstream's main (cmd/controller) is a nested module the Go module proxy does not serve; the
// controllers themselves live in the main module github.com/cert-manager/cert-manager, under pkg/.
// This main runs them the way upstream does (one ContextFactory, each registered controller with
// five workers, then the shared informer factories), reduced to what the tests need:
//
//   - the controllers are the ones this file imports (each package registers itself into
//     controller.Known()): issuers, clusterissuers, the six Certificate controllers (trigger,
//     keymanager, requestmanager, issuing, readiness, revisionmanager) and certificates-metrics,
//     the CertificateRequest approver, and the selfSigned and CA signers. ACME, Vault and Venafi
//     are left out (no ACME server or Vault runs in the test environment, and their DNS-provider
//     and SDK dependencies would double the build; Venafi's SDK is refused by the proxy). An
//     Issuer of those kinds gets Ready=False ("issuer ... not registered" in the log);
//   - no leader election, no webhook, no ingress or Gateway API shims, no pprof, no TLS metrics;
//   - the metrics server listens only on the loopback address it is given, and also answers
//     /readyz (503 until every informer has synced, then 200 "cert-manager-controller ready");
//   - before starting, it checks that the API server answers and that the cert-manager.io CRDs
//     are served, and exits 1 saying which is missing.
//
// The field manager of what each controller writes is "cert-manager-" + its name, e.g.
// cert-manager-certificates-issuing for the Secret.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/cert-manager/cert-manager/pkg/controller"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"github.com/cert-manager/cert-manager/pkg/util"

	"kubectl-drift.local/tools/cert-manager/internal/preflight"

	// Issuer types, registered into pkg/issuer (without them: "issuer 'selfsigned' not registered").
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"

	// Controllers, registered into controller.Known().
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/metrics"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	"github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
)

// requiredResources are the cert-manager.io/v1 resources the controllers above list and watch.
var requiredResources = []string{"certificaterequests", "certificates", "clusterissuers", "issuers"}

func main() {
	klog.InitFlags(nil) // -v, -vmodule, ... (pkg/logs registers none on the standard flag set)
	kubeconfig := flag.String("kubeconfig", "", "path to the kubeconfig (required)")
	clusterResourceNamespace := flag.String("cluster-resource-namespace", "cert-manager",
		"namespace of the Secrets that ClusterIssuers refer to (a CA ClusterIssuer's key pair)")
	namespace := flag.String("namespace", "", "watch only this namespace (ClusterIssuers are then not reconciled); all when empty")
	metricsAddr := flag.String("metrics-listen-address", "",
		"127.0.0.1:PORT (any loopback address) for /metrics and /readyz (required)")
	startupTimeout := flag.Duration("startup-timeout", 20*time.Second,
		"how long to wait for the API server and the cert-manager CRDs before exiting 1")
	workers := flag.Int("workers", 5, "workers per controller")
	flag.Parse()

	logf.InitLogs() // klog as the output of the standard log package, contextual logging on
	defer logf.FlushLogs()
	if err := run(*kubeconfig, *clusterResourceNamespace, *namespace, *metricsAddr, *startupTimeout, *workers); err != nil {
		logf.FlushLogs()
		fmt.Fprintf(os.Stderr, "cert-manager-controller: %v\n", err) // "address already in use" here: test-env retries
		os.Exit(1)
	}
}

func run(kubeconfig, clusterResourceNamespace, namespace, metricsAddr string, startupTimeout time.Duration, workers int) error {
	if kubeconfig == "" {
		return errors.New("--kubeconfig is required")
	}
	if err := preflight.Loopback(metricsAddr); err != nil {
		return fmt.Errorf("--metrics-listen-address: %w", err)
	}
	if workers < 1 {
		return errors.New("--workers must be at least 1")
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx = logf.NewContext(ctx, logf.Log, "controller")
	log := logf.FromContext(ctx)
	log.Info("starting cert-manager controller", "version", util.AppVersion, "kubeconfig", kubeconfig,
		"clusterResourceNamespace", clusterResourceNamespace, "namespace", namespace)

	// Listen first: a port taken meanwhile fails at once ("address already in use"), and the
	// test environment starts the process again on another port.
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", metricsAddr)
	if err != nil {
		return err
	}
	defer ln.Close()

	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("reading kubeconfig %s: %w", kubeconfig, err)
	}
	if err := preflight.WaitForCRDs(ctx, util.RestConfigWithUserAgent(cfg, "preflight"), startupTimeout, requiredResources...); err != nil {
		return err
	}

	factory, err := controller.NewContextFactory(ctx, controller.ContextOptions{
		Kubeconfig:         kubeconfig,
		KubernetesAPIQPS:   20, // upstream's defaults (APF, when the server has it, lifts them)
		KubernetesAPIBurst: 50,
		Namespace:          namespace,
		IssuerOptions: controller.IssuerOptions{
			ClusterResourceNamespace: clusterResourceNamespace,
		},
		CertificateOptions: controller.CertificateOptions{
			// upstream's defaults: every annotation but kubectl's, Flux's and Argo CD's is
			// copied from a Certificate to its CertificateRequests
			CopiedAnnotationPrefixes:                 []string{"*", "-kubectl.kubernetes.io/", "-fluxcd.io/", "-argocd.argoproj.io/"},
			CertificateRequestMinimumBackoffDuration: time.Hour,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
		},
	})
	if err != nil {
		return fmt.Errorf("building the controller context: %w", err)
	}
	cmctx, err := factory.Build()
	if err != nil {
		return fmt.Errorf("building the controller context: %w", err)
	}

	names := make([]string, 0, len(controller.Known()))
	for name := range controller.Known() {
		if namespace != "" && name == clusterissuers.ControllerName {
			continue // cluster-scoped: not run when scoped to one namespace (as upstream)
		}
		names = append(names, name)
	}
	sort.Strings(names)

	// Metrics as upstream serves them (prefix certmanager_), and our /readyz beside them.
	cmctx.Metrics.SetupCertificateCollector(cmctx.SharedInformerFactory.Certmanager().V1().Certificates().Lister())
	cmctx.Metrics.SetupIssuerCollector(cmctx.SharedInformerFactory.Certmanager().V1().Issuers().Lister())
	if slices.Contains(names, clusterissuers.ControllerName) {
		cmctx.Metrics.SetupClusterIssuerCollector(cmctx.SharedInformerFactory.Certmanager().V1().ClusterIssuers().Lister())
	}
	srv := cmctx.Metrics.NewServer(ln)
	var ready atomic.Bool
	mux := http.NewServeMux()
	mux.Handle("/metrics", srv.Handler)
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			http.Error(w, "cert-manager-controller starting: informers not synced", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "cert-manager-controller ready %s\n", util.AppVersion)
	})
	srv.Handler = mux

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		log.Info("serving metrics and /readyz", "address", ln.Addr().String())
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("metrics server: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		<-gctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(shutdownCtx) //nolint:contextcheck
	})

	for _, name := range names {
		iface, err := controller.Known()[name](factory)
		if err != nil {
			return fmt.Errorf("creating controller %s: %w", name, err)
		}
		g.Go(func() error {
			if err := iface.Run(workers, gctx); err != nil {
				return fmt.Errorf("controller %s: %w", name, err)
			}
			return nil
		})
	}
	log.Info("started controllers", "controllers", strings.Join(names, ","))

	// The constructors above registered their informers; start them, and be ready once every one
	// has synced (each controller waits for the same caches before its workers start).
	cmctx.SharedInformerFactory.Start(gctx.Done())
	cmctx.KubeSharedInformerFactory.Start(gctx.Done())
	cmctx.HTTP01ResourceMetadataInformersFactory.Start(gctx.Done())
	g.Go(func() error {
		for typ, ok := range cmctx.SharedInformerFactory.WaitForCacheSync(gctx.Done()) {
			if !ok {
				return fmt.Errorf("informer for %v did not sync", typ)
			}
		}
		for typ, ok := range cmctx.KubeSharedInformerFactory.WaitForCacheSync(gctx.Done()) {
			if !ok {
				return fmt.Errorf("informer for %v did not sync", typ)
			}
		}
		for typ, ok := range cmctx.HTTP01ResourceMetadataInformersFactory.WaitForCacheSync(gctx.Done()) {
			if !ok {
				return fmt.Errorf("informer for %v did not sync", typ)
			}
		}
		ready.Store(true)
		log.Info("cert-manager controller ready: informers synced")
		return nil
	})

	err = g.Wait()
	cmctx.HTTP01ResourceMetadataInformersFactory.Shutdown()
	cmctx.KubeSharedInformerFactory.Shutdown()
	cmctx.SharedInformerFactory.Shutdown()
	if err != nil && ctx.Err() == nil {
		return err
	}
	log.Info("stopped")
	return nil
}
