package envtest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

var _ = Describe("CRD installation by envtest", func() {
	It("installs testdata/crds, established and served, with its printer columns", func() {
		By("envtest's own record of what it installed")
		Expect(testEnv.CRDs).To(HaveLen(1))
		Expect(testEnv.CRDs[0].Name).To(Equal("widgets.test.kubext.dev"))

		By("the CRD as the API has it")
		crd := &apiextensionsv1.CustomResourceDefinition{}
		Expect(k8sClient.Get(ctx, key("", "widgets.test.kubext.dev"), crd)).To(Succeed())
		conditions := map[apiextensionsv1.CustomResourceDefinitionConditionType]apiextensionsv1.ConditionStatus{}
		for _, c := range crd.Status.Conditions {
			conditions[c.Type] = c.Status
		}
		Expect(conditions).To(HaveKeyWithValue(apiextensionsv1.Established, apiextensionsv1.ConditionTrue))
		Expect(conditions).To(HaveKeyWithValue(apiextensionsv1.NamesAccepted, apiextensionsv1.ConditionTrue))
		Expect(crd.Status.AcceptedNames.Kind).To(Equal("Widget"))
		Expect(crd.Status.AcceptedNames.ShortNames).To(ConsistOf("wd"))
		Expect(crd.Status.StoredVersions).To(ConsistOf("v1"))

		By("discovery and the REST mapper")
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		resources, err := dc.ServerResourcesForGroupVersion("test.kubext.dev/v1")
		Expect(err).NotTo(HaveOccurred())
		names := map[string]metav1.APIResource{}
		for _, r := range resources.APIResources {
			names[r.Name] = r
		}
		Expect(names).To(HaveKey("widgets"))
		Expect(names).To(HaveKey("widgets/status"))
		Expect(names["widgets"].Namespaced).To(BeTrue())
		Expect(names["widgets"].Kind).To(Equal("Widget"))
		Expect(names["widgets"].ShortNames).To(ConsistOf("wd"))
		Expect(names["widgets"].Verbs).To(ContainElements("create", "get", "list", "watch", "update", "patch", "delete", "deletecollection"))
		mapping, err := k8sClient.RESTMapper().RESTMapping(schema.GroupKind{Group: "test.kubext.dev", Kind: "Widget"}, "v1")
		Expect(err).NotTo(HaveOccurred())
		Expect(mapping.Resource.Resource).To(Equal("widgets"))
		Expect(mapping.Scope.Name()).To(Equal(meta.RESTScopeNameNamespace))

		By("the printer columns, as kubectl get asks for them (a Table)")
		ns := newNamespace("crd")
		widget := &Widget{}
		widget.Name, widget.Namespace = "printed", ns
		widget.Spec.Replicas = int32Ptr(3)
		Expect(k8sClient.Create(ctx, widget)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, key(ns, "printed"), widget)).To(Succeed())
			g.Expect(widget.Status.Ready).To(BeTrue())
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

		httpClient, err := rest.HTTPClientFor(cfg)
		Expect(err).NotTo(HaveOccurred())
		req, err := http.NewRequestWithContext(ctx, http.MethodGet,
			strings.TrimSuffix(cfg.Host, "/")+"/apis/test.kubext.dev/v1/namespaces/"+ns+"/widgets", nil)
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
		resp, err := httpClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.StatusCode).To(Equal(http.StatusOK), "%s", body)
		var table metav1.Table
		Expect(json.Unmarshal(body, &table)).To(Succeed(), "%s", body)
		Expect(table.Kind).To(Equal("Table"))
		var columns []string
		for _, c := range table.ColumnDefinitions {
			columns = append(columns, c.Name+":"+c.Type)
		}
		Expect(columns).To(Equal([]string{"Name:string", "Replicas:integer", "Ready:boolean", "Age:date"}))
		Expect(table.Rows).To(HaveLen(1))
		cells := table.Rows[0].Cells
		Expect(cells).To(HaveLen(4))
		Expect(cells[0]).To(Equal("printed"))
		Expect(cells[1]).To(BeEquivalentTo(3))
		Expect(cells[2]).To(BeTrue())
		Expect(cells[3]).To(MatchRegexp(`^\d+s$`))
	})
})
