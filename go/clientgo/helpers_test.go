// Package clientgo drives a real kubext with client-go used directly, the way
// a hand-written controller or tool does: shared informers feeding a
// workqueue, the protobuf wire format, server-side apply through apply
// configurations, the dynamic client on custom resources, discovery and the
// RESTMapper, and leader election on Leases.
//
// Each test starts its own kubext (`kubext serve --storage memory`) through
// kubexttest; without KUBEXT_BIN the tests are skipped:
//
//	cd go && KUBEXT_BIN=/abs/path/to/target/debug/kubext GOFLAGS=-p=1 go test ./clientgo/ -count=1 -v
//
// The assertions are kube-apiserver's behaviour; with KUBEXT_CLIENTGO_UPSTREAM
// and KUBEXT_CLIENTGO_ETCD (see start) the same tests run against
// kube-apiserver and etcd instead, e.g. scripts/upstream's builds:
//
//	KUBEXT_CLIENTGO_UPSTREAM=$(../scripts/upstream --cached kube-apiserver) \
//	KUBEXT_CLIENTGO_ETCD=$(../scripts/upstream --cached etcd) go test ./clientgo/ -count=1 -v
package clientgo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"kubext.dev/go/internal/kubexttest"
)

// start runs a kubext for the test and returns it with a context that ends
// with the test (or after a minute, so that a hang fails instead of blocking).
//
// To check what the tests expect against kube-apiserver itself, set
// KUBEXT_CLIENTGO_UPSTREAM to a kube-apiserver binary and
// KUBEXT_CLIENTGO_ETCD to an etcd (3.4.31+/3.5.13+ for WatchList, e.g.
// scripts/upstream's etcd): each test then starts them through
// controller-runtime's envtest instead, with the WatchList feature on.
func start(t *testing.T) (*kubexttest.Server, context.Context) {
	t.Helper()
	var srv *kubexttest.Server
	if apiserver := os.Getenv("KUBEXT_CLIENTGO_UPSTREAM"); apiserver != "" {
		srv = startUpstream(t, apiserver, os.Getenv("KUBEXT_CLIENTGO_ETCD"))
	} else {
		srv = kubexttest.Start(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return srv, ctx
}

// startUpstream starts kube-apiserver and etcd with envtest.
func startUpstream(t *testing.T, apiserver, etcd string) *kubexttest.Server {
	t.Helper()
	if etcd == "" {
		t.Fatal("KUBEXT_CLIENTGO_UPSTREAM needs KUBEXT_CLIENTGO_ETCD (an etcd binary)")
	}
	assets := t.TempDir()
	for name, bin := range map[string]string{"kube-apiserver": apiserver, "etcd": etcd} {
		abs, err := filepath.Abs(bin)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(abs, filepath.Join(assets, name)); err != nil {
			t.Fatal(err)
		}
	}
	ctrllog.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	env.ControlPlane.GetAPIServer().Configure().Append("feature-gates", "WatchList=true")
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting kube-apiserver with envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping envtest: %v", err)
		}
	})
	return &kubexttest.Server{Config: cfg, URL: cfg.Host}
}

// createNamespace creates the namespace name and fails the test otherwise.
func createNamespace(t *testing.T, ctx context.Context, cs kubernetes.Interface, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
}

// eventually polls cond every 50 ms until it holds, failing the test with
// what and cond's last complaint after timeout.
func eventually(t *testing.T, ctx context.Context, timeout time.Duration, what string, cond func(ctx context.Context) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		last = cond(ctx)
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: not within %s: %v", what, timeout, last)
	}
}

// exchange is one request a client sent and how it was answered.
type exchange struct {
	method, uri     string
	reqContentType  string
	status          int // 0: no response
	respContentType string
	respBodyPrefix  []byte // the first bytes of a non-streamed body
	watch           bool
}

func (e exchange) String() string {
	return fmt.Sprintf("%s %s (Content-Type %q) -> %d (Content-Type %q)",
		e.method, e.uri, e.reqContentType, e.status, e.respContentType)
}

// requestLog records every exchange of the clients whose rest.Config it
// wraps (rest.Config.Wrap(log.wrap)).
type requestLog struct {
	mu        sync.Mutex
	exchanges []exchange
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		e := exchange{
			method:         req.Method,
			uri:            req.URL.RequestURI(),
			reqContentType: req.Header.Get("Content-Type"),
			watch:          req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1",
		}
		if resp != nil {
			e.status = resp.StatusCode
			e.respContentType = resp.Header.Get("Content-Type")
			if !e.watch && resp.Body != nil {
				// Read the whole body to keep its first bytes, then hand an
				// equal body on to the client.
				body, readErr := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				resp.Body = io.NopCloser(bytes.NewReader(body))
				if readErr != nil {
					resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{readErr}))
				}
				e.respBodyPrefix = body[:min(len(body), 8)]
			}
		}
		l.mu.Lock()
		l.exchanges = append(l.exchanges, e)
		l.mu.Unlock()
		return resp, err
	})
}

func (l *requestLog) all() []exchange {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]exchange(nil), l.exchanges...)
}

func (l *requestLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.exchanges = nil
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }
