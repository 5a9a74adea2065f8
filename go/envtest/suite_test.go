// Package envtest runs a kubebuilder-style Ginkgo suite against kubext started
// as controller-runtime envtest's kube-apiserver: KUBEBUILDER_ASSETS holds a
// `kube-apiserver` symlink to $KUBEXT_BIN and an `etcd` stand-in built from
// ../cmd/etcd-standin.
//
// To check what the suite expects against upstream: KUBEXT_BIN may name
// kube-apiserver itself, with KUBEXT_ENVTEST_ETCD naming a real etcd (used in
// the stand-in's place) and KUBEXT_ENVTEST_UPSTREAM=1: kube-apiserver alone
// runs no garbage collector, and over an etcd older than 3.4.31/3.5.13 (no
// RequestWatchProgress, e.g. Debian's 3.4.23) it answers WatchList requests
// with an error and informers fall back to lists; those assertions are then
// skipped.
package envtest

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientfeatures "k8s.io/client-go/features"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

var (
	scheme    = runtime.NewScheme()
	testEnv   *envtest.Environment
	cfg       *rest.Config
	k8sClient client.Client // uncached, as the suite's own admin
	mgr       ctrl.Manager
	ctx       context.Context
	cancel    context.CancelFunc
	mgrDone   = make(chan error, 1)

	kubextBin string
	etcdBin   string
	// managerRequests records every request the manager's client (its
	// caches included) sends.
	managerRequests = &requestLog{}
	// The control plane's processes, found once Start returned.
	apiServerProcess, etcdProcess suiteProcess
)

func TestEnvtest(t *testing.T) {
	kubextBin = os.Getenv("KUBEXT_BIN")
	if kubextBin == "" {
		t.Skip("KUBEXT_BIN is unset: set it to a kubext binary (e.g. KUBEXT_BIN=../target/debug/kubext " +
			"from the module's root; a relative path is taken from there) to run controller-runtime envtest against kubext")
	}
	RegisterFailHandler(Fail)
	start := time.Now()
	RunSpecs(t, "kubext as envtest's kube-apiserver")
	fmt.Printf("suite total: %d ms\n", time.Since(start).Milliseconds())
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.TODO())

	// `go test` runs the suite in its package's directory; relative paths
	// are taken from the module's root, where `go test ./...` is run.
	moduleRoot, err := filepath.Abs("..")
	Expect(err).NotTo(HaveOccurred())
	kubextBin = fromModuleRoot(moduleRoot, kubextBin)
	// The binary may be being rebuilt: give it a moment to reappear.
	Eventually(func() error { _, err := os.Stat(kubextBin); return err }).
		WithTimeout(2*time.Minute).WithPolling(time.Second).
		Should(Succeed(), "KUBEXT_BIN=%s does not exist", kubextBin)

	By("preparing KUBEBUILDER_ASSETS: kube-apiserver → $KUBEXT_BIN, etcd → the stand-in")
	assets, err := os.MkdirTemp("", "kubext-envtest-assets-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, assets)
	Expect(os.Symlink(kubextBin, filepath.Join(assets, "kube-apiserver"))).To(Succeed())
	etcdBin = filepath.Join(assets, "etcd")
	if realEtcd := os.Getenv("KUBEXT_ENVTEST_ETCD"); realEtcd != "" {
		// A real etcd in the stand-in's place.
		etcdBin = fromModuleRoot(moduleRoot, realEtcd)
		Expect(os.Symlink(etcdBin, filepath.Join(assets, "etcd"))).To(Succeed())
	} else {
		build := exec.Command("go", "build", "-o", etcdBin, "./cmd/etcd-standin")
		build.Dir = moduleRoot
		out, err := build.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "go build ./cmd/etcd-standin: %s", out)
	}
	GinkgoT().Setenv("KUBEBUILDER_ASSETS", assets)
	// Per-binary overrides would win over KUBEBUILDER_ASSETS.
	for _, name := range []string{"TEST_ASSET_KUBE_APISERVER", "TEST_ASSET_ETCD"} {
		if old, ok := os.LookupEnv(name); ok {
			Expect(os.Unsetenv(name)).To(Succeed())
			DeferCleanup(os.Setenv, name, old)
		}
	}

	// client-go 0.35+ turns WatchListClient on by default: the informers
	// below stream their initial state with sendInitialEvents=true.
	Expect(clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient)).To(BeTrue(),
		"client-go's WatchListClient feature gate is off (KUBE_FEATURE_WatchListClient=false?)")

	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	utilruntime.Must(addWidgetTypes(scheme))

	testEnv = &envtest.Environment{
		Scheme: scheme,
		CRDInstallOptions: envtest.CRDInstallOptions{
			Paths: []string{filepath.Join("testdata", "crds")},
		},
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths: []string{filepath.Join("testdata", "webhooks")},
		},
		BinaryAssetsDirectory: assets,
	}
	// kube-apiserver 1.33 turns its WatchList feature off by default (the
	// client then falls back to a list); the suite turns it on so that the
	// caches stream their initial state (kubext serves it either way).
	testEnv.ControlPlane.GetAPIServer().Configure().Append("feature-gates", "WatchList=true")

	By("starting envtest")
	started := time.Now()
	cfg, err = testEnv.Start()
	elapsed := time.Since(started)
	// What identifies this suite's processes is known once Start ran, even
	// if it failed after starting them (AfterSuite checks they go).
	if apiServer := testEnv.ControlPlane.APIServer; apiServer != nil && apiServer.CertDir != "" {
		apiServerProcess = suiteProcess{name: "kube-apiserver", exe: kubextBin, arg: "--cert-dir=" + apiServer.CertDir}
	}
	if etcd := testEnv.ControlPlane.Etcd; etcd != nil && etcd.DataDir != "" {
		etcdProcess = suiteProcess{name: "etcd", exe: etcdBin, arg: "--data-dir=" + etcd.DataDir}
	}
	fmt.Printf("envtest start: %d ms\n", elapsed.Milliseconds())
	Expect(err).NotTo(HaveOccurred())
	Expect(cfg).NotTo(BeNil())
	for _, p := range []*suiteProcess{&apiServerProcess, &etcdProcess} {
		Expect(p.find()).To(HaveLen(1), "%s processes (exe %s, argument %s)", p.name, p.exe, p.arg)
	}

	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	By("starting the manager: the Widget controller and its webhooks")
	wio := &testEnv.WebhookInstallOptions
	mgrConfig := rest.CopyConfig(cfg)
	mgrConfig.Wrap(managerRequests.wrap)
	mgr, err = ctrl.NewManager(mgrConfig, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: webhook.NewServer(webhook.Options{
			Host:    wio.LocalServingHost,
			Port:    wio.LocalServingPort,
			CertDir: wio.LocalServingCertDir,
		}),
	})
	Expect(err).NotTo(HaveOccurred())
	Expect((&WidgetReconciler{
		Client:   mgr.GetClient(),
		Scheme:   mgr.GetScheme(),
		Recorder: mgr.GetEventRecorder(widgetControllerID),
	}).SetupWithManager(mgr)).To(Succeed())
	Expect(setupWidgetWebhooks(mgr)).To(Succeed())

	go func() {
		defer GinkgoRecover()
		mgrDone <- mgr.Start(ctx)
	}()

	// As kubebuilder's webhook suites do: wait until the webhook server
	// accepts TLS connections.
	dialer := &net.Dialer{Timeout: time.Second}
	addr := net.JoinHostPort(wio.LocalServingHost, strconv.Itoa(wio.LocalServingPort))
	Eventually(func() error {
		conn, err := tls.DialWithDialer(dialer, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			return err
		}
		return conn.Close()
	}).WithTimeout(30 * time.Second).Should(Succeed())
	Expect(mgr.GetCache().WaitForCacheSync(ctx)).To(BeTrue())
})

var _ = AfterSuite(func() {
	By("stopping the manager")
	if cancel != nil {
		cancel()
	}
	if mgr != nil {
		Eventually(mgrDone).WithTimeout(30 * time.Second).Should(Receive(BeNil()))
	}
	By("stopping envtest")
	if testEnv == nil {
		return
	}
	var started []suiteProcess
	for _, p := range []suiteProcess{apiServerProcess, etcdProcess} {
		if p.exe == "" {
			continue
		}
		for _, pid := range p.find() {
			p.pid = pid
			started = append(started, p)
		}
	}
	Expect(testEnv.Stop()).To(Succeed())
	for _, p := range started {
		Expect(p.alive()).To(BeFalse(), "%s (pid %d) is still running after testEnv.Stop()", p.name, p.pid)
	}
	for _, p := range []suiteProcess{apiServerProcess, etcdProcess} {
		if p.exe != "" {
			Expect(p.find()).To(BeEmpty(), "%s processes left after testEnv.Stop()", p.name)
		}
	}
})

// suiteProcess is one of the processes envtest starts for the suite: its
// executable and an argument only this suite's instance has.
type suiteProcess struct {
	name string
	exe  string
	arg  string
	pid  int
}

// matches tells whether /proc/<pid> is this process: its executable is exe
// and one of its arguments is arg.
func (p suiteProcess) matches(pid int) bool {
	exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe"))
	if err != nil {
		return false
	}
	// A binary replaced on disk while running reads as "<path> (deleted)".
	exe = strings.TrimSuffix(exe, " (deleted)")
	want, err := filepath.EvalSymlinks(p.exe)
	if err != nil {
		want = p.exe
	}
	if exe != want {
		return false
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return false
	}
	for _, a := range strings.Split(string(cmdline), "\x00") {
		if a == p.arg {
			return true
		}
	}
	return false
}

// find scans /proc for this process.
func (p suiteProcess) find() []int {
	entries, err := os.ReadDir("/proc")
	Expect(err).NotTo(HaveOccurred())
	var pids []int
	for _, entry := range entries {
		pid, err := strconv.Atoi(entry.Name())
		if err != nil {
			continue
		}
		if p.matches(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// alive tells whether the recorded pid still runs (and is still ours).
func (p suiteProcess) alive() bool {
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.pid), "stat"))
	if err != nil {
		return false
	}
	// A zombie has been stopped but not reaped.
	if fields := strings.Fields(string(status)); len(fields) > 2 && fields[2] == "Z" {
		return true
	}
	return p.matches(p.pid)
}

// requestLog keeps each request a client sent and how it was answered.
type requestLog struct {
	mu       sync.Mutex
	requests []loggedRequest
}

type loggedRequest struct {
	method string
	uri    string
	status int // 0: no response
}

func (r loggedRequest) String() string {
	return fmt.Sprintf("%s %s -> %d", r.method, r.uri, r.status)
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		logged := loggedRequest{method: req.Method, uri: req.URL.RequestURI()}
		if resp != nil {
			logged.status = resp.StatusCode
		}
		l.mu.Lock()
		l.requests = append(l.requests, logged)
		l.mu.Unlock()
		return resp, err
	})
}

func (l *requestLog) all() []loggedRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]loggedRequest(nil), l.requests...)
}

// fromModuleRoot makes path absolute, a relative one from the module's root.
func fromModuleRoot(moduleRoot, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(moduleRoot, path)
}

// againstUpstream tells whether KUBEXT_BIN is kube-apiserver itself.
func againstUpstream() bool { return os.Getenv("KUBEXT_ENVTEST_UPSTREAM") == "1" }

// etcdHasWatchProgress tells whether the suite's etcd answers
// RequestWatchProgress (3.4.31+, 3.5.13+, 3.6), which kube-apiserver needs to
// serve WatchList. The stand-in is no etcd: kubext serves WatchList itself.
func etcdHasWatchProgress() bool {
	out, err := exec.Command(etcdBin, "--version").Output()
	if err != nil {
		return false
	}
	var major, minor, patch int
	for _, line := range strings.Split(string(out), "\n") {
		if v, found := strings.CutPrefix(line, "etcd Version: "); found {
			if _, err := fmt.Sscanf(v, "%d.%d.%d", &major, &minor, &patch); err != nil {
				return false
			}
		}
	}
	switch {
	case major != 3:
		return major > 3
	case minor == 4:
		return patch >= 31
	case minor == 5:
		return patch >= 13
	}
	return minor > 5
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
