package clientgo

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"kubext.dev/go/internal/kubexttest"
)

// A relying party outside the cluster verifies kubext's service-account
// tokens as workload-identity federations do: go-oidc discovers the issuer
// (/.well-known/openid-configuration), fetches its keys from jwks_uri and
// verifies a token issued for its audience. Both documents are the bytes
// kube-apiserver's Go code writes for kubext's key (go-jose's JWK set).
func TestServiceAccountTokensVerifyThroughOIDCDiscovery(t *testing.T) {
	if os.Getenv("KUBEXT_CLIENTGO_UPSTREAM") != "" {
		t.Skip("runs kubext with its own issuer flags")
	}
	port := strconv.Itoa(kubexttest.FreePort(t))
	issuer := "https://127.0.0.1:" + port
	srv := kubexttest.Start(t, "--secure-port", port, "--service-account-issuer", issuer)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	accounts := srv.Clientset(t).CoreV1().ServiceAccounts("default")
	tokenFor := func(audience string) string {
		var token string
		eventually(t, ctx, 30*time.Second, "a token of default/default", func(ctx context.Context) error {
			issued, err := accounts.CreateToken(ctx, "default", &authenticationv1.TokenRequest{
				Spec: authenticationv1.TokenRequestSpec{Audiences: []string{audience}},
			}, metav1.CreateOptions{})
			if err == nil {
				token = issued.Status.Token
			}
			return err
		})
		return token
	}

	// The relying party trusts kubext's CA; the documents are granted to
	// service accounts and administrators, so it asks as the admin.
	httpClient, err := rest.HTTPClientFor(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx = oidc.ClientContext(ctx, httpClient)
	provider, err := oidc.NewProvider(ctx, issuer)
	if err != nil {
		t.Fatalf("discovering %s: %v", issuer, err)
	}
	verifier := provider.Verifier(&oidc.Config{ClientID: "vault"})
	verified, err := verifier.Verify(ctx, tokenFor("vault"))
	if err != nil {
		t.Fatalf("verifying a token for vault: %v", err)
	}
	if verified.Subject != "system:serviceaccount:default:default" || verified.Issuer != issuer {
		t.Fatalf("verified subject %q issuer %q", verified.Subject, verified.Issuer)
	}
	if _, err := verifier.Verify(ctx, tokenFor("elsewhere")); err == nil || !strings.Contains(err.Error(), "expected audience \"vault\"") {
		t.Fatalf("a token for another audience: %v, want refused for its audience", err)
	}

	// The bytes, as kube-apiserver renders them with go-jose for the same key.
	pemBytes, err := os.ReadFile(filepath.Join(srv.DataDir, "pki", "sa.pub"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(pemBytes)
	public, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256(block.Bytes)
	keyset, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{
		Key: public, KeyID: base64.RawURLEncoding.EncodeToString(digest[:]), Algorithm: "ES256", Use: "sig",
	}}})
	if err != nil {
		t.Fatal(err)
	}
	configuration, err := json.Marshal(struct {
		Issuer        string   `json:"issuer"`
		JWKSURI       string   `json:"jwks_uri"`
		ResponseTypes []string `json:"response_types_supported"`
		SubjectTypes  []string `json:"subject_types_supported"`
		SigningAlgs   []string `json:"id_token_signing_alg_values_supported"`
	}{issuer, issuer + "/openid/v1/jwks", []string{"id_token"}, []string{"public"}, []string{"ES256"}})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string][]byte{
		"/openid/v1/jwks":                   keyset,
		"/.well-known/openid-configuration": configuration,
	} {
		got, err := srv.Clientset(t).Discovery().RESTClient().Get().AbsPath(path).DoRaw(ctx)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		if string(got) != string(want) {
			t.Errorf("GET %s:\n got %s\nwant %s", path, got, want)
		}
	}
}
