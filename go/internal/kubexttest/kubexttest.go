// Package kubexttest starts a real kubext for a Go test: `kubext serve` on
// its in-memory store and a free port, as a child process that the test's
// cleanup stops. Tests talk to it over HTTPS with the admin kubeconfig it
// writes, as any client of a kube-apiserver would.
package kubexttest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Server is a running kubext.
type Server struct {
	// Kubeconfig is the admin kubeconfig's path (user system:admin in
	// system:masters, trusting kubext's generated CA).
	Kubeconfig string
	// Config is Kubeconfig as a client-go rest.Config.
	Config *rest.Config
	// URL is https://127.0.0.1:<port>.
	URL string
	// DataDir holds kubext's generated certificates (ca.crt among them).
	DataDir string
}

// ModuleRoot is the Go module's root (the folder holding go.mod), whichever
// package's directory `go test` runs in.
func ModuleRoot(t testing.TB) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller information to find the module's root")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Binary is $KUBEXT_BIN made absolute (a relative path is taken from the
// module's root); the test is skipped when it is unset.
func Binary(t testing.TB) string {
	bin := os.Getenv("KUBEXT_BIN")
	if bin == "" {
		t.Skip("KUBEXT_BIN is unset: set it to a kubext binary (e.g. KUBEXT_BIN=../target/debug/kubext " +
			"from the module's root) to run the Go tests against kubext")
	}
	if !filepath.IsAbs(bin) {
		bin = filepath.Join(ModuleRoot(t), bin)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("KUBEXT_BIN: %v", err)
	}
	return bin
}

// Start runs `kubext serve --storage memory` with extra flags and waits until
// it answers /readyz. The test's cleanup stops it (SIGTERM, then SIGKILL).
func Start(t testing.TB, extraFlags ...string) *Server {
	t.Helper()
	bin := Binary(t)
	dataDir := t.TempDir()
	args := append([]string{"serve", "--storage", "memory", "--secure-port", "0", "--data-dir", dataDir}, extraFlags...)
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dataDir, "kubext.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		stop(cmd, exited)
		_ = logFile.Close()
		if t.Failed() {
			if log, err := os.ReadFile(logFile.Name()); err == nil {
				t.Logf("kubext's log (last 4 KiB):\n%s", tail(log, 4096))
			}
		}
	})

	lines := make(chan string)
	go func() {
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			lines <- scanner.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	server := &Server{DataDir: dataDir}
	deadline := time.After(60 * time.Second)
	for server.Kubeconfig == "" || server.URL == "" {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("kubext exited before printing its kubeconfig (log in %s)", logFile.Name())
			}
			if path, found := strings.CutPrefix(line, "kubeconfig: "); found {
				server.Kubeconfig = path
			}
			if url, found := strings.CutPrefix(line, "listening: "); found {
				server.URL = url
			}
		case <-deadline:
			t.Fatal("kubext printed no kubeconfig within 60 s")
		}
	}
	go func() {
		for range lines {
		}
	}()
	server.Config, err = clientcmd.BuildConfigFromFlags("", server.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	server.waitReady(t)
	return server
}

func (s *Server) waitReady(t testing.TB) {
	client := kubernetes.NewForConfigOrDie(s.Config)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var last error
	for ctx.Err() == nil {
		_, last = client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if last == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("kubext at %s is not ready: %v", s.URL, last)
}

// Clientset is a typed client-go clientset for the admin.
func (s *Server) Clientset(t testing.TB) *kubernetes.Clientset {
	clientset, err := kubernetes.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	return clientset
}

func stop(cmd *exec.Cmd, exited <-chan struct{}) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// Process is a program a test runs beside kubext (an upstream controller or
// extension server), its output kept in a file and shown when the test fails.
type Process struct {
	cmd    *exec.Cmd
	exited chan struct{}
	// Log is the file holding the program's stdout and stderr.
	Log string
}

// StartProcess runs bin with args until the test ends.
func StartProcess(t testing.TB, bin string, args ...string) *Process {
	t.Helper()
	logFile, err := os.CreateTemp(t.TempDir(), filepath.Base(bin)+"-*.log")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	p := &Process{cmd: cmd, exited: make(chan struct{}), Log: logFile.Name()}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		stop(cmd, p.exited)
		_ = logFile.Close()
		if t.Failed() {
			if log, err := os.ReadFile(p.Log); err == nil {
				t.Logf("%s's log (last 4 KiB):\n%s", filepath.Base(bin), tail(log, 4096))
			}
		}
	})
	return p
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// Upstream builds (or finds already built) an upstream Go program with the
// repository's scripts/upstream, returning the binary's path, e.g.
// Upstream(t, "sample-controller", "0.37.1").
func Upstream(t testing.TB, program, version string) string {
	t.Helper()
	script := filepath.Join(ModuleRoot(t), "..", "scripts", "upstream")
	cmd := exec.Command(script, program, version)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/upstream %s %s: %v", program, version, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	bin := lines[len(lines)-1]
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("scripts/upstream %s %s printed %q: %v", program, version, bin, err)
	}
	return bin
}

// ModuleDir is the folder of an upstream module in the Go module cache
// (downloaded from the module proxy when missing), for its test data such
// as sample-controller's artifacts/examples.
func ModuleDir(t testing.TB, module, version string) string {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", module+"@v"+version).Output()
	if err != nil {
		t.Fatalf("go mod download %s@v%s: %v", module, version, err)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil || info.Dir == "" {
		t.Fatalf("go mod download %s@v%s: %s %v", module, version, info.Error, err)
	}
	return info.Dir
}

// Kubectl runs kubectl against the server and returns its standard output;
// the test fails when kubectl fails.
func (s *Server) Kubectl(t testing.TB, args ...string) string {
	t.Helper()
	out, err := s.TryKubectl(args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// TryKubectl runs kubectl against the server, returning its standard output
// (or, when it fails, its standard error too). Warnings go to standard error.
func (s *Server) TryKubectl(args ...string) (string, error) {
	return s.kubectl("", args...)
}

// kubectlPath is $KUBECTL (./dev test sets it to the release kubext serves),
// else kubectl from PATH.
func kubectlPath() string {
	if path := os.Getenv("KUBECTL"); path != "" {
		return path
	}
	return "kubectl"
}

func (s *Server) kubectl(stdin string, args ...string) (string, error) {
	cmd := exec.Command(kubectlPath(), append([]string{"--kubeconfig", s.Kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out) + stderr.String(), err
	}
	return string(out), nil
}

// FreePort is a TCP port on 127.0.0.1 that nothing listened on a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// EtcdBinary is the etcd a test runs: $KUBEXT_ETCD, else upstream's v3.6
// when scripts/upstream already built it, else `etcd` on the PATH (Debian's
// etcd-server).
func EtcdBinary(t testing.TB) string {
	if bin := os.Getenv("KUBEXT_ETCD"); bin != "" {
		return bin
	}
	matches, _ := filepath.Glob(filepath.Join(ModuleRoot(t), "..", ".cache", "upstream", "bin", "etcd-v3.6.*"))
	if len(matches) > 0 {
		return matches[len(matches)-1]
	}
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Fatal("no etcd: set KUBEXT_ETCD, run scripts/upstream etcd, or install Debian's etcd-server")
	}
	return bin
}

// StartEtcd runs a single-member etcd in a temporary folder until the test
// ends, returning its client URL once it answers /health.
func StartEtcd(t testing.TB) string {
	t.Helper()
	client := fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))
	peer := fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))
	StartProcess(t, EtcdBinary(t), "--data-dir", t.TempDir(),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "default="+peer)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(client + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return client
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd at %s is not healthy after 30 s: %v", client, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// KubectlStdin runs kubectl with stdin as its standard input (`-f -`).
func (s *Server) KubectlStdin(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	out, err := s.kubectl(stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}
