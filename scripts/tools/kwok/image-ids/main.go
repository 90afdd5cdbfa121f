// image-ids: the part of a kubelet that KWOK leaves out, for the test environment (scripts/test-env).
//
// KWOK makes scheduled pods Running with container statuses, but their imageID stays "" and they
// have no containerID. A real kubelet (containerd) reports imageID as REPO@sha256:DIGEST, the
// manifest digest the tag pointed at when the image was pulled, and keeps it while the container
// runs, even when the tag moves later. This program watches pods that KWOK runs and fills each
// container status whose imageID is empty:
//   - an image in one of the environment's local registries (-registry, and -alias for the other
//     address of the same storage) gets the digest its tag has now, asked of the registry (Basic
//     auth); an image named by digest gets that digest;
//   - any other image (Docker Hub, quay.io, ...: no network here) keeps imageID "", as the pod of a
//     kubelet that could not resolve it would not be running at all; the tests never read them;
//   - every container gets a containerID containerd://HASH (made from the pod's uid and the
//     container's name) when it has none.
//
// It writes the pod's status (the status subresource) as field manager "kubelet", like a kubelet. A pod whose
// image could not be resolved (the registry did not answer) is tried again after a second.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
)

type aliases []string

func (a *aliases) String() string     { return strings.Join(*a, ",") }
func (a *aliases) Set(v string) error { *a = append(*a, v); return nil }

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster")
	registry := flag.String("registry", "", "HOST:PORT of the local registry to ask (Basic auth)")
	var alias aliases
	flag.Var(&alias, "alias", "HOST:PORT of another registry serving the same storage (repeatable)")
	user := flag.String("username", "", "registry user")
	passwordFile := flag.String("password-file", "", "file holding the registry password")
	flag.Parse()
	if *kubeconfig == "" || *registry == "" {
		log.Fatal("image-ids: -kubeconfig and -registry are required")
	}
	password := ""
	if *passwordFile != "" {
		b, err := os.ReadFile(*passwordFile)
		if err != nil {
			log.Fatalf("image-ids: %v", err)
		}
		password = strings.TrimSpace(string(b))
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatalf("image-ids: %v", err)
	}
	cfg.UserAgent = "image-ids"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		log.Fatalf("image-ids: %v", err)
	}
	r := &resolver{
		hosts: map[string]bool{*registry: true},
		ask:   *registry,
		auth:  authn.FromConfig(authn.AuthConfig{Username: *user, Password: password}),
	}
	for _, a := range alias {
		r.hosts[a] = true
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Only pods bound to a node: KWOK's nodes are the only nodes of the test cluster.
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "spec.nodeName!=" }))
	pods := factory.Core().V1().Pods()
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, 5*time.Second))
	enqueue := func(obj any) {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			queue.Add(key)
		}
	}
	if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		log.Fatalf("image-ids: %v", err)
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), pods.Informer().HasSynced) {
		log.Fatal("image-ids: the pod cache did not sync")
	}
	go func() { <-ctx.Done(); queue.ShutDown() }()
	// test-env waits for this line.
	log.Print("image-ids: watching pods")
	for i := 0; i < 4; i++ {
		go func() {
			for {
				key, shutdown := queue.Get()
				if shutdown {
					return
				}
				obj, exists, err := pods.Informer().GetStore().GetByKey(key)
				if err == nil && exists {
					err = r.fill(ctx, client, obj.(*corev1.Pod))
				}
				if err != nil {
					// A conflict with KWOK's own write of the status is expected: tried again quietly.
					if !apierrors.IsConflict(err) {
						log.Printf("image-ids: %s: %v (trying again)", key, err)
					}
					queue.AddRateLimited(key)
				} else {
					queue.Forget(key)
				}
				queue.Done(key)
			}
		}()
	}
	<-ctx.Done()
}

type resolver struct {
	hosts map[string]bool
	ask   string
	auth  authn.Authenticator
}

func (r *resolver) fill(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod) error {
	if pod.DeletionTimestamp != nil || (pod.Status.Phase != corev1.PodRunning && pod.Status.Phase != corev1.PodSucceeded) {
		return nil
	}
	// Container statuses are an atomic list: the whole status is written back, on the version read
	// (a conflict with KWOK's own write is tried again).
	pod = pod.DeepCopy()
	changed := false
	var firstErr error
	fill := func(statuses []corev1.ContainerStatus) {
		for i := range statuses {
			c := &statuses[i]
			if c.ContainerID == "" {
				sum := sha256.Sum256([]byte(string(pod.UID) + "/" + c.Name))
				c.ContainerID = "containerd://" + hex.EncodeToString(sum[:])
				changed = true
			}
			if c.ImageID == "" {
				id, err := r.imageID(ctx, c.Image)
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("image %s: %w", c.Image, err)
				}
				if id != "" {
					c.ImageID = id
					changed = true
				}
			}
		}
	}
	fill(pod.Status.ContainerStatuses)
	fill(pod.Status.InitContainerStatuses)
	if changed {
		if _, err := client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{FieldManager: "kubelet"}); err != nil {
			return err
		}
	}
	return firstErr
}

// imageID is what containerd would report for image: REPO@DIGEST for an image in a local registry,
// "" for any other.
func (r *resolver) imageID(ctx context.Context, image string) (string, error) {
	ref, err := name.ParseReference(image)
	if err != nil || !r.hosts[ref.Context().RegistryStr()] {
		return "", nil
	}
	repo := ref.Context().Name()
	if d, ok := ref.(name.Digest); ok {
		return repo + "@" + d.DigestStr(), nil
	}
	// Ask the registry that takes Basic auth, whichever address the pod names.
	asked, err := name.ParseReference(r.ask+"/"+ref.Context().RepositoryStr()+":"+ref.Identifier(), name.Insecure)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	desc, err := remote.Head(asked, remote.WithAuth(r.auth), remote.WithContext(ctx))
	var terr *transport.Error
	if errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound {
		// Not in the registry: a kubelet could not pull it; nothing to write.
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return repo + "@" + desc.Digest.String(), nil
}
