package serialization

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"kubext.dev/go/internal/kubexttest"
)

// upstreamRelease is the kube-apiserver the golden answers come from.
const upstreamRelease = "1.37.2"

// adminToken authenticates the test to kube-apiserver as kubext's admin
// kubeconfig's user (kubext-admin in system:masters), so that what the
// server records of the requester (a CSR's username and groups) agrees.
const adminToken = "serialization-admin-token"

// kubeAPIServerBinary is scripts/upstream's cached kube-apiserver of
// upstreamRelease ($KUBEXT_SERIALIZATION_KUBE_APISERVER overrides it).
func kubeAPIServerBinary(t testing.TB) string {
	if bin := os.Getenv("KUBEXT_SERIALIZATION_KUBE_APISERVER"); bin != "" {
		return bin
	}
	script := filepath.Join(kubexttest.ModuleRoot(t), "..", "scripts", "upstream")
	out, err := exec.Command(script, "--cached", "kube-apiserver", upstreamRelease).Output()
	if err != nil {
		t.Fatalf("no kube-apiserver %s built (run ../scripts/upstream kube-apiserver %s): %v", upstreamRelease, upstreamRelease, err)
	}
	return strings.TrimSpace(string(out))
}

// startUpstream runs kube-apiserver on its own etcd until the test ends,
// with no controller manager beside it (as kubext runs none of its
// controllers that write the compared objects).
func startUpstream(t testing.TB) *rest.Config {
	t.Helper()
	bin := kubeAPIServerBinary(t)
	etcd := kubexttest.StartEtcd(t)
	dir := t.TempDir()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	saKey := write("sa.key", pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	tokens := write("tokens.csv", []byte(adminToken+`,kubext-admin,,"system:masters"`+"\n"))
	port := kubexttest.FreePort(t)
	kubexttest.StartProcess(t, bin,
		"--etcd-servers="+etcd,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir="+filepath.Join(dir, "certs"),
		"--token-auth-file="+tokens,
		"--service-account-key-file="+saKey,
		"--service-account-signing-key-file="+saKey,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode=RBAC",
	)
	cfg := &rest.Config{
		Host:            fmt.Sprintf("https://127.0.0.1:%d", port),
		BearerToken:     adminToken,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var last error
	for ctx.Err() == nil {
		if _, last = client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); last == nil {
			return cfg
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("kube-apiserver at %s is not ready: %v", cfg.Host, last)
	return nil
}
