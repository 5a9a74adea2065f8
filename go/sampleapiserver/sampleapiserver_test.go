// Package sampleapiserver runs upstream's k8s.io/sample-apiserver (the
// wardle aggregated API server), built unchanged from its own module by
// scripts/upstream, as a local process on its own etcd, delegating
// authentication and authorization to a real kubext, and registered there
// with an APIService whose Service is `type: ExternalName`. Requests for
// wardle.example.com then go client → kubext → sample-apiserver, as they do
// through kube-apiserver's aggregator in its default mode.
package sampleapiserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"kubext.dev/go/internal/kubexttest"
)

const (
	// The same minor as kubext serves (1.33): newer sample-apiservers run
	// admission plugins on APIs that only newer releases serve.
	version = "0.37.2"
	timeout = 60 * time.Second
	group   = "wardle.example.com"
)

var (
	flunders = schema.GroupVersionResource{Group: group, Version: "v1beta1", Resource: "flunders"}
	fischers = schema.GroupVersionResource{Group: group, Version: "v1alpha1", Resource: "fischers"}
)

func TestSampleAPIServer(t *testing.T) {
	srv := kubexttest.Start(t)
	bin := kubexttest.Upstream(t, "sample-apiserver", version)
	artifacts := filepath.Join(kubexttest.ModuleDir(t, "k8s.io/sample-apiserver", version), "artifacts")
	ctx := context.Background()
	clientset := srv.Clientset(t)

	// Its serving certificate names the Service, as the aggregator checks
	// it: api.wardle.svc.
	caPEM, certFile, keyFile := servingCertificate(t, "api.wardle.svc")
	etcd := kubexttest.StartEtcd(t)
	port := kubexttest.FreePort(t)
	wardle := kubexttest.StartProcess(t, bin,
		"--etcd-servers", etcd,
		"--kubeconfig", srv.Kubeconfig,
		"--authentication-kubeconfig", srv.Kubeconfig,
		"--authorization-kubeconfig", srv.Kubeconfig,
		"--bind-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(port),
		"--tls-cert-file", certFile,
		"--tls-private-key-file", keyFile,
	)

	srv.Kubectl(t, "create", "namespace", "wardle")
	_, err := clientset.CoreV1().Services("wardle").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "api"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "127.0.0.1"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		version  string
		priority int
	}{{"v1alpha1", 15}, {"v1beta1", 20}} {
		apiService := fmt.Sprintf(`{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService",
			"metadata":{"name":"%s.%s"},
			"spec":{"group":"%s","version":"%s","groupPriorityMinimum":1000,"versionPriority":%d,
			"service":{"namespace":"wardle","name":"api","port":%d},"caBundle":"%s"}}`,
			v.version, group, group, v.version, v.priority, port, caPEM)
		srv.KubectlStdin(t, apiService, "create", "-f", "-")
	}

	t.Run("the APIServices become Available", func(t *testing.T) {
		for _, name := range []string{"v1alpha1." + group, "v1beta1." + group} {
			out, err := srv.TryKubectl("wait", "--for=condition=Available", "--timeout=60s", "apiservice/"+name)
			if err != nil {
				status, _ := srv.TryKubectl("get", "apiservice", name, "-o", "jsonpath={.status}")
				t.Fatalf("%s: %v %s\nstatus: %s", name, err, out, status)
			}
		}
		if wardle.Exited() {
			t.Fatal("sample-apiserver exited")
		}
	})

	t.Run("kubectl creates its example flunder and lists flunders and fischers", func(t *testing.T) {
		out := srv.Kubectl(t, "create", "-f", filepath.Join(artifacts, "flunders", "01-flunder.yaml"))
		if !strings.Contains(out, "flunder.wardle.example.com/my-first-flunder created") {
			t.Fatalf("kubectl create: %s", out)
		}
		out = srv.Kubectl(t, "get", "flunders,fischers", "-o", "name")
		if strings.TrimSpace(out) != "flunder.wardle.example.com/my-first-flunder" {
			t.Fatalf("kubectl get flunders,fischers: %q", out)
		}
		flunder := srv.Kubectl(t, "get", "flunder", "my-first-flunder", "-o", "jsonpath={.apiVersion} {.metadata.labels.sample-label}")
		if flunder != "wardle.example.com/v1beta1 true" {
			t.Fatalf("my-first-flunder: %q", flunder)
		}
	})

	t.Run("a watch through kubext sees flunders come and go", func(t *testing.T) {
		resource := dynamic.NewForConfigOrDie(srv.Config).Resource(flunders).Namespace("default")
		w, err := resource.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=watched"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		flunder := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": group + "/v1beta1", "kind": "Flunder",
			"metadata": map[string]any{"name": "watched"},
		}}
		if _, err := resource.Create(ctx, flunder, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := resource.Delete(ctx, "watched", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		var seen []watch.EventType
		deadline := time.After(timeout)
		for len(seen) < 2 {
			select {
			case event, ok := <-w.ResultChan():
				if !ok {
					t.Fatalf("watch closed after %v", seen)
				}
				if obj, ok := event.Object.(*unstructured.Unstructured); !ok || obj.GetName() != "watched" {
					t.Fatalf("event %s of %#v", event.Type, event.Object)
				}
				seen = append(seen, event.Type)
			case <-deadline:
				t.Fatalf("watch events %v after %s, want ADDED and DELETED", seen, timeout)
			}
		}
		if !slices.Equal(seen, []watch.EventType{watch.Added, watch.Deleted}) {
			t.Fatalf("watch events %v, want ADDED, DELETED", seen)
		}
	})

	t.Run("the group is in discovery, legacy and aggregated", func(t *testing.T) {
		groups, err := clientset.Discovery().ServerGroups()
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(groups.Groups, func(g metav1.APIGroup) bool { return g.Name == group })
		if i < 0 {
			t.Fatalf("%s not in /apis", group)
		}
		if pv := groups.Groups[i].PreferredVersion.Version; pv != "v1beta1" {
			t.Fatalf("preferred version %s, want v1beta1 (the higher versionPriority)", pv)
		}
		resources, err := clientset.Discovery().ServerResourcesForGroupVersion(group + "/v1alpha1")
		if err != nil {
			t.Fatal(err)
		}
		names := []string{}
		for _, r := range resources.APIResources {
			names = append(names, r.Name)
		}
		slices.Sort(names)
		if !slices.Equal(names, []string{"fischers", "flunders"}) {
			t.Fatalf("v1alpha1 resources %v", names)
		}

		body, err := clientset.Discovery().RESTClient().Get().AbsPath("/apis").
			SetHeader("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList").DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var aggregated apidiscoveryv2.APIGroupDiscoveryList
		if err := json.Unmarshal(body, &aggregated); err != nil {
			t.Fatal(err)
		}
		j := slices.IndexFunc(aggregated.Items, func(g apidiscoveryv2.APIGroupDiscovery) bool { return g.Name == group })
		if j < 0 {
			t.Fatalf("%s not in aggregated discovery", group)
		}
		var versions []string
		for _, v := range aggregated.Items[j].Versions {
			versions = append(versions, v.Version)
			if v.Freshness != apidiscoveryv2.DiscoveryFreshnessCurrent {
				t.Errorf("%s freshness %q", v.Version, v.Freshness)
			}
		}
		if !slices.Equal(versions, []string{"v1beta1", "v1alpha1"}) {
			t.Fatalf("aggregated versions %v, want v1beta1 then v1alpha1", versions)
		}
	})

	t.Run("the group is in OpenAPI v2 and v3", func(t *testing.T) {
		raw := func(path string) string {
			body, err := clientset.Discovery().RESTClient().Get().AbsPath(path).DoRaw(ctx)
			if err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
			return string(body)
		}
		eventuallyContains(t, func() string { return raw("/openapi/v2") }, `"/apis/wardle.example.com/v1beta1/namespaces/{namespace}/flunders"`)
		eventuallyContains(t, func() string { return raw("/openapi/v3") }, `"apis/wardle.example.com/v1beta1"`)
		v3 := raw("/openapi/v3/apis/wardle.example.com/v1alpha1")
		for _, want := range []string{`"/apis/wardle.example.com/v1alpha1/fischers"`, `"io.k8s.sample-apiserver.pkg.apis.wardle.v1alpha1.Fischer"`} {
			if !strings.Contains(v3, want) {
				t.Fatalf("/openapi/v3/apis/wardle.example.com/v1alpha1 lacks %s", want)
			}
		}
	})

	t.Run("its delegated authorization asks kubext's RBAC", func(t *testing.T) {
		alice := rest.CopyConfig(srv.Config)
		alice.Impersonate = rest.ImpersonationConfig{UserName: "alice"}
		aliceFlunders := dynamic.NewForConfigOrDie(alice).Resource(flunders).Namespace("default")
		_, err := aliceFlunders.List(ctx, metav1.ListOptions{})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("alice listing flunders: %v, want Forbidden", err)
		}
		// The words of the extension server's authorizer (its
		// SubjectAccessReview to kubext denied the request).
		want := `flunders.wardle.example.com is forbidden: User "alice" cannot list resource "flunders" in API group "wardle.example.com" in the namespace "default"`
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("refusal %q, want %q", err, want)
		}
		grant(t, ctx, clientset, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"})
		eventually(t, timeout, func() error {
			list, err := aliceFlunders.List(ctx, metav1.ListOptions{})
			if err == nil && len(list.Items) == 0 {
				err = fmt.Errorf("alice sees no flunders")
			}
			return err
		})
	})

	t.Run("a bearer token sent straight to it is reviewed by kubext", func(t *testing.T) {
		const account = "flunder-reader"
		accounts := clientset.CoreV1().ServiceAccounts("default")
		if _, err := accounts.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: account}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		grant(t, ctx, clientset, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: account, Namespace: "default"})
		issued, err := accounts.CreateToken(ctx, account, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ca, err := base64.StdEncoding.DecodeString(caPEM)
		if err != nil {
			t.Fatal(err)
		}
		// Not through kubext: straight to sample-apiserver, with nothing but
		// the token.
		direct := func(token string) dynamic.ResourceInterface {
			config := &rest.Config{
				Host:            "https://127.0.0.1:" + strconv.Itoa(port),
				BearerToken:     token,
				TLSClientConfig: rest.TLSClientConfig{CAData: ca, ServerName: "api.wardle.svc"},
			}
			return dynamic.NewForConfigOrDie(config).Resource(flunders).Namespace("default")
		}
		eventually(t, timeout, func() error {
			_, err := direct(issued.Status.Token).List(ctx, metav1.ListOptions{})
			return err
		})
		flunder := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": group + "/v1beta1", "kind": "Flunder",
			"metadata": map[string]any{"name": "by-token"},
		}}
		_, err = direct(issued.Status.Token).Create(ctx, flunder, metav1.CreateOptions{})
		want := `flunders.wardle.example.com is forbidden: User "system:serviceaccount:default:flunder-reader" cannot create resource "flunders" in API group "wardle.example.com" in the namespace "default"`
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
			t.Fatalf("creating with a reader's token: %v, want %q", err, want)
		}
		_, err = direct("not-a-token").List(ctx, metav1.ListOptions{})
		if !apierrors.IsUnauthorized(err) || err.Error() != "Unauthorized" {
			t.Fatalf("listing with a token nobody issued: %v, want Unauthorized", err)
		}
		// The account's token dies with it, once the cached review expires.
		if err := accounts.Delete(ctx, account, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, timeout, func() error {
			_, err := direct(issued.Status.Token).List(ctx, metav1.ListOptions{})
			if !apierrors.IsUnauthorized(err) {
				return fmt.Errorf("the deleted account's token: %v, want Unauthorized", err)
			}
			return nil
		})
	})

	t.Run("its BanFlunder admission plugin reads fischers", func(t *testing.T) {
		srv.KubectlStdin(t, `{"apiVersion":"wardle.example.com/v1alpha1","kind":"Fischer",
			"metadata":{"name":"ban"},"disallowedFlunders":["banned"]}`, "create", "-f", "-")
		resource := dynamic.NewForConfigOrDie(srv.Config).Resource(flunders).Namespace("default")
		flunder := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": group + "/v1beta1", "kind": "Flunder",
			"metadata": map[string]any{"name": "banned"},
		}}
		// The plugin's informer sees the new Fischer a moment later.
		eventually(t, timeout, func() error {
			_, err := resource.Create(ctx, flunder, metav1.CreateOptions{})
			if err == nil {
				_ = resource.Delete(ctx, "banned", metav1.DeleteOptions{})
				return fmt.Errorf("flunder banned was created")
			}
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "this name may not be used, please change the resource name") {
				t.Fatalf("creating a banned flunder: %v", err)
			}
			return nil
		})
	})

	t.Run("its NamespaceLifecycle reads kubext's namespaces", func(t *testing.T) {
		resource := dynamic.NewForConfigOrDie(srv.Config).Resource(flunders).Namespace("nowhere")
		flunder := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": group + "/v1beta1", "kind": "Flunder",
			"metadata": map[string]any{"name": "lost"},
		}}
		_, err := resource.Create(ctx, flunder, metav1.CreateOptions{})
		if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `namespaces "nowhere" not found`) {
			t.Fatalf("creating in a namespace that does not exist: %v", err)
		}
	})

	t.Run("its informers on kubext's admission and flow-control APIs synced", func(t *testing.T) {
		log, err := os.ReadFile(wardle.Log)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			// 0.37 runs MutatingAdmissionPolicy too, from kubext's
			// admissionregistration.k8s.io/v1 policies.
			"Loaded 4 mutating admission controller(s) successfully in the following order: NamespaceLifecycle,MutatingAdmissionPolicy,MutatingAdmissionWebhook,BanFlunder.",
			"Loaded 2 validating admission controller(s) successfully",
			// The policy sources refresh once their informers synced.
			"policy_source.go:253] refreshing policies",
			"Running API Priority and Fairness config worker",
		} {
			if !strings.Contains(string(log), want) {
				t.Errorf("sample-apiserver's log lacks %q", want)
			}
		}
		for _, line := range strings.Split(string(log), "\n") {
			if strings.HasPrefix(line, "E") && strings.Contains(line, "reflector") {
				t.Errorf("sample-apiserver's informer failed: %s", line)
			}
		}
	})
}

// grant lets subject get, list and watch flunders, as a cluster
// administrator would with kubectl create clusterrole/clusterrolebinding.
func grant(t *testing.T, ctx context.Context, clientset *kubernetes.Clientset, subject rbacv1.Subject) {
	t.Helper()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "flunder-reader"},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{group}, Resources: []string{"flunders"}, Verbs: []string{"get", "list", "watch"},
		}},
	}
	_, err := clientset.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "flunder-reader-" + strings.ToLower(subject.Kind) + "-" + subject.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{subject},
	}
	if _, err := clientset.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// servingCertificate writes a new CA and a serving certificate for dnsName
// signed by it, returning the CA as base64 PEM (an APIService's caBundle)
// and the certificate's and key's files.
func servingCertificate(t *testing.T, dnsName string) (caBundle, certFile, keyFile string) {
	t.Helper()
	dir := t.TempDir()
	caKey := newKey(t)
	now := time.Now()
	caTemplate := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "wardle-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key := newKey(t)
	template := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: dnsName}, DNSNames: []string{dnsName},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "EC PRIVATE KEY", keyDER)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	return base64.StdEncoding.EncodeToString(caPEM), certFile, keyFile
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func writePEM(t *testing.T, path, kind string, der []byte) {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

func eventually(t *testing.T, timeout time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %v", timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// eventuallyContains waits until get's answer contains want (kubext merges
// an extension server's OpenAPI in the background).
func eventuallyContains(t *testing.T, get func() string, want string) {
	t.Helper()
	eventually(t, timeout, func() error {
		if !strings.Contains(get(), want) {
			return fmt.Errorf("no %s", want)
		}
		return nil
	})
}
