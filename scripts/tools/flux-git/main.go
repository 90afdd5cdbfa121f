// flux-git: the test environment's Git server for the Flux controllers (scripts/test-env).
//
// It serves, over smart HTTP without authentication (clone, fetch and push), every bare repository
// under -root: ROOT/NAME.git is http://127.0.0.1:PORT/NAME.git. Tests create repositories with the
// git CLI (git init --bare ROOT/NAME.git) and push over HTTP or to the path. The server is gitkit,
// the one inside Flux's own test Git server (github.com/fluxcd/pkg/gittestserver v0.25.0 wraps
// gitkit v0.6.0 in an httptest.Server on a random port); this main gives it the port it is told,
// on 127.0.0.1 only. gitkit runs the git CLI (upload-pack, receive-pack), which must be on PATH.
package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/fluxcd/gitkit"
)

func main() {
	root := flag.String("root", "", "directory holding the bare repositories (NAME.git); created when missing")
	port := flag.Int("port", 0, "port to listen on, on 127.0.0.1")
	flag.Parse()
	if *root == "" || *port <= 0 || *port > 65535 {
		fmt.Fprintln(os.Stderr, "usage: flux-git -root DIR -port PORT")
		os.Exit(2)
	}
	dir, err := filepath.Abs(*root)
	if err != nil {
		log.Fatalf("flux-git: %v", err)
	}
	srv := gitkit.New(gitkit.Config{Dir: dir})
	if err := srv.Setup(); err != nil {
		log.Fatalf("flux-git: setting up %s: %v", dir, err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(*port)))
	if err != nil {
		// "address already in use" in the log tells scripts/test-env to pick another port.
		log.Fatalf("flux-git: %v", err)
	}
	mux := http.NewServeMux()
	// The health check names this server, so a check cannot mistake another listener for it.
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintf(w, "flux-git ok %s\n", dir) })
	mux.Handle("/", srv)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second}
	fmt.Printf("flux-git: serving %s at http://%s\n", dir, ln.Addr())

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		_ = hs.Close()
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatalf("flux-git: %v", err)
	}
}
