package clientgo

import (
	"context"
	"fmt"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// gadgetGroup is the API group of the tests' custom resource, Gadget.
const gadgetGroup = "clientgo.kubext.dev"

var gadgets = schema.GroupVersionResource{Group: gadgetGroup, Version: "v1", Resource: "gadgets"}

// gadgetCRD defines the namespaced Gadget (short name gdg) with a
// structural schema and the status subresource: spec.size (a required
// integer ≥ 0), spec.color, spec.extra (keeping unknown fields) and
// status.phase, status.observedGeneration. Anything else is pruned.
func gadgetCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets." + gadgetGroup},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gadgetGroup,
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural:     "gadgets",
				Singular:   "gadget",
				Kind:       "Gadget",
				ListKind:   "GadgetList",
				ShortNames: []string{"gdg"},
			},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name:    "v1",
				Served:  true,
				Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {
							Type:     "object",
							Required: []string{"size"},
							Properties: map[string]apiextensionsv1.JSONSchemaProps{
								"size":  {Type: "integer", Minimum: ptrTo(0.0)},
								"color": {Type: "string"},
								"extra": {Type: "object", XPreserveUnknownFields: ptrTo(true)},
							},
						},
						"status": {
							Type: "object",
							Properties: map[string]apiextensionsv1.JSONSchemaProps{
								"phase":              {Type: "string"},
								"observedGeneration": {Type: "integer", Format: "int64"},
							},
						},
					},
				}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{
					Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
				},
			}},
		},
	}
}

// createGadgetCRD creates the Gadget CRD and waits until it is Established.
func createGadgetCRD(t *testing.T, ctx context.Context, cfg *rest.Config) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	// JSON: client-go 0.37's typed clients send built-in types (CRDs among
	// them) as protobuf by default; TestProtobufBuiltins covers that, the
	// tests of custom resources do not depend on it.
	client, err := apiextensionsclient.NewForConfig(jsonConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	crd, err := crds.Create(ctx, gadgetCRD(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the Gadget CRD: %v", err)
	}
	eventually(t, ctx, 20*time.Second, "the Gadget CRD Established", func(ctx context.Context) error {
		crd, err = crds.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		conditions := map[apiextensionsv1.CustomResourceDefinitionConditionType]apiextensionsv1.ConditionStatus{}
		for _, c := range crd.Status.Conditions {
			conditions[c.Type] = c.Status
		}
		if conditions[apiextensionsv1.Established] != apiextensionsv1.ConditionTrue ||
			conditions[apiextensionsv1.NamesAccepted] != apiextensionsv1.ConditionTrue {
			return fmt.Errorf("conditions %+v", crd.Status.Conditions)
		}
		return nil
	})
	if got := crd.Status.AcceptedNames; got.Kind != "Gadget" || got.Plural != "gadgets" || got.ListKind != "GadgetList" ||
		got.Singular != "gadget" || len(got.ShortNames) != 1 || got.ShortNames[0] != "gdg" {
		t.Errorf("the CRD's status.acceptedNames: %+v", got)
	}
	if len(crd.Status.StoredVersions) != 1 || crd.Status.StoredVersions[0] != "v1" {
		t.Errorf("the CRD's status.storedVersions: %v, want [v1]", crd.Status.StoredVersions)
	}
	return crd
}

func ptrTo[T any](v T) *T { return &v }

// jsonConfig is cfg with JSON as the only content type sent and accepted.
func jsonConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = "application/json"
	cfg.AcceptContentTypes = "application/json"
	return cfg
}
