// cert-manager-cainjector: the test environment's cert-manager CA injector (scripts/test-env).
//
// Upstream's main (cmd/cainjector) is a nested module the Go module proxy does not serve; the
// injector itself is pkg/controller/cainjector of the main module github.com/cert-manager/cert-manager.
// This main runs it in a controller-runtime manager the way upstream does, with:
//
//   - all four injectables: ValidatingWebhookConfigurations, MutatingWebhookConfigurations,
//     APIServices and CRDs (conversion webhook), and every CA source: the annotations
//     cert-manager.io/inject-ca-from (a Certificate's Secret, ca.crt), inject-ca-from-secret and
//     inject-apiserver-ca;
//   - no leader election; Secrets are read from the API server, not cached (their metadata only is
//     watched), as upstream;
//   - the metrics server (controller-runtime's, plain HTTP) only on the loopback address it is
//     given, answering also /readyz: 503 until the informers of the injectables, Certificates and
//     Secrets have synced, then 200 "cert-manager-cainjector ready";
//   - a check before starting that the API server answers and serves certificates.cert-manager.io
//     (exit 1 saying which is missing).
//
// --kubeconfig is controller-runtime's own flag (pkg/client/config registers it on the standard
// flag set; defining it again would panic). What it writes has field manager
// cert-manager-cainjector.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmscheme "github.com/cert-manager/cert-manager/pkg/client/clientset/versioned/scheme"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"github.com/cert-manager/cert-manager/pkg/util"

	"kubectl-drift.local/tools/cert-manager/internal/preflight"
)

func main() {
	klog.InitFlags(nil) // -v, -vmodule, ...
	metricsAddr := flag.String("metrics-bind-address", "",
		"127.0.0.1:PORT (any loopback address) for /metrics and /readyz (required)")
	namespace := flag.String("namespace", "", "inject only into objects of this namespace; all when empty")
	startupTimeout := flag.Duration("startup-timeout", 20*time.Second,
		"how long to wait for the API server and the Certificate CRD before exiting 1")
	flag.Parse() // --kubeconfig: controller-runtime's flag, read by ctrl.GetConfig

	logf.InitLogs()
	defer logf.FlushLogs()
	ctrl.SetLogger(klog.NewKlogr())
	if err := run(*metricsAddr, *namespace, *startupTimeout); err != nil {
		logf.FlushLogs()
		fmt.Fprintf(os.Stderr, "cert-manager-cainjector: %v\n", err) // "address already in use" here: test-env retries
		os.Exit(1)
	}
}

func run(metricsAddr, namespace string, startupTimeout time.Duration) error {
	if err := preflight.Loopback(metricsAddr); err != nil {
		return fmt.Errorf("--metrics-bind-address: %w", err)
	}
	if flag.Lookup("kubeconfig").Value.String() == "" {
		return errors.New("--kubeconfig is required")
	}
	ctx := ctrl.SetupSignalHandler()
	log := klog.NewKlogr().WithName("cainjector")
	log.Info("starting cert-manager cainjector", "version", util.AppVersion, "namespace", namespace)

	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("reading the kubeconfig: %w", err)
	}
	cfg = util.RestConfigWithUserAgent(cfg, "cainjector") // field manager cert-manager-cainjector
	if err := preflight.WaitForCRDs(ctx, cfg, startupTimeout, "certificates"); err != nil {
		return err
	}

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(cmscheme.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	utilruntime.Must(apiregistrationv1.AddToScheme(scheme))

	var namespaces map[string]cache.Config
	if namespace != "" {
		namespaces = map[string]cache.Config{namespace: {}}
	}
	var ready atomic.Bool
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme,
		Cache: cache.Options{
			ReaderFailOnMissingInformer: true,
			DefaultNamespaces:           namespaces,
		},
		// Secrets: GET from the API server when injecting; only their metadata is watched.
		Client:         client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
		LeaderElection: false,
		Metrics: metricsserver.Options{
			BindAddress: metricsAddr,
			ExtraHandlers: map[string]http.Handler{
				"/readyz": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					if !ready.Load() {
						http.Error(w, "cert-manager-cainjector starting: informers not synced", http.StatusServiceUnavailable)
						return
					}
					fmt.Fprintf(w, "cert-manager-cainjector ready %s\n", util.AppVersion)
				}),
			},
		},
		HealthProbeBindAddress: "0", // none
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}

	if err := cainjector.RegisterAllInjectors(ctx, mgr, cainjector.SetupOptions{
		Namespace:                    namespace,
		EnableCertificatesDataSource: true,
		EnabledReconcilersFor: map[string]bool{
			cainjector.ValidatingWebhookConfigurationName: true,
			cainjector.MutatingWebhookConfigurationName:   true,
			cainjector.APIServiceName:                     true,
			cainjector.CustomResourceDefinitionName:       true,
		},
	}); err != nil {
		return fmt.Errorf("registering the injectors: %w", err)
	}

	// Ready once the shared informers the injectors watch have synced (GetInformer blocks until
	// then; the controllers wait for the same ones before their workers start).
	secretMeta := &metav1.PartialObjectMetadata{}
	secretMeta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	watched := []client.Object{
		&admissionregistrationv1.ValidatingWebhookConfiguration{},
		&admissionregistrationv1.MutatingWebhookConfiguration{},
		&apiregistrationv1.APIService{},
		&apiextensionsv1.CustomResourceDefinition{},
		&cmapi.Certificate{},
		secretMeta,
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		for _, obj := range watched {
			if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("waiting for the %T informer: %w", obj, err)
			}
		}
		ready.Store(true)
		log.Info("cert-manager cainjector ready: informers synced", "metrics", metricsAddr)
		return nil
	})); err != nil {
		return err
	}

	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running the manager: %w", err)
	}
	log.Info("stopped")
	return nil
}
