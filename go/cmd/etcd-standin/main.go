// Command etcd-standin stands in for etcd in controller-runtime envtest's
// assets directory when kubext is the kube-apiserver: kubext keeps its own
// store when nothing answers as etcd at --etcd-servers, so all envtest needs
// from "etcd" is a process that answers GET /health on its client URL until
// it is killed.
//
// It takes etcd's command line as envtest writes it (--listen-client-urls,
// --advertise-client-urls, --listen-peer-urls, --data-dir, and whatever a
// suite adds): --listen-client-urls is the only flag it uses, every other one
// is accepted and ignored. `--help` lists the flags it reads and exits 0, as
// envtest runs `etcd --help` to look for optional flags.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

const usage = `Usage: etcd-standin [flags]

A stand-in for etcd that only answers GET /health on its client URLs.

  --listen-client-urls 'http://localhost:2379'
        List of URLs to listen on for client traffic (comma-separated).
  --advertise-client-urls ''
        Accepted and ignored.
  --listen-peer-urls ''
        Accepted and ignored.
  --data-dir ''
        Accepted and ignored.
`

// flagValue finds --name=value, -name=value, --name value or -name value in
// args; the last occurrence wins, as with etcd's flag parsing.
func flagValue(args []string, name string) (string, bool) {
	value, found := "", false
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if !strings.HasPrefix(arg, "-") {
			continue
		}
		key := strings.TrimLeft(arg, "-")
		if k, v, ok := strings.Cut(key, "="); ok {
			if k == name {
				value, found = v, true
			}
			continue
		}
		if key == name && i+1 < len(args) {
			value, found = args[i+1], true
			i++
		}
	}
	return value, found
}

func wantsHelp(args []string) bool {
	for _, arg := range args {
		switch arg {
		case "-h", "--h", "-help", "--help":
			return true
		}
	}
	return false
}

// listenAddresses turns etcd's comma-separated client URLs into host:port
// addresses.
func listenAddresses(urls string) ([]string, error) {
	var addrs []string
	for _, raw := range strings.Split(urls, ",") {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		u, err := url.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("--listen-client-urls: %q: %w", raw, err)
		}
		if u.Scheme != "http" {
			return nil, fmt.Errorf("--listen-client-urls: %q: only http is served", raw)
		}
		if u.Port() == "" {
			return nil, fmt.Errorf("--listen-client-urls: %q has no port", raw)
		}
		addrs = append(addrs, u.Host)
	}
	if len(addrs) == 0 {
		return nil, errors.New("--listen-client-urls names no URL")
	}
	return addrs, nil
}

func main() {
	args := os.Args[1:]
	if wantsHelp(args) {
		fmt.Print(usage)
		return
	}
	urls, ok := flagValue(args, "listen-client-urls")
	if !ok {
		urls = "http://localhost:2379"
	}
	addrs, err := listenAddresses(urls)
	if err != nil {
		log.Fatalf("etcd-standin: %v", err)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"health":"true"}`))
	})

	servers := make([]*http.Server, 0, len(addrs))
	errs := make(chan error, len(addrs))
	for _, addr := range addrs {
		listener, err := net.Listen("tcp", addr)
		if err != nil {
			log.Fatalf("etcd-standin: listen on %s: %v", addr, err)
		}
		server := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		servers = append(servers, server)
		go func() { errs <- server.Serve(listener) }()
		log.Printf("etcd-standin: answering GET /health on http://%s", listener.Addr())
	}

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	select {
	case sig := <-signals:
		log.Printf("etcd-standin: %v, stopping", sig)
	case err := <-errs:
		log.Fatalf("etcd-standin: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, server := range servers {
		_ = server.Shutdown(ctx)
	}
}
