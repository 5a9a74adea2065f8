package clientgo

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// aggregatedDiscovery is the Content-Type of kube-apiserver's aggregated
// discovery documents (/api and /apis), which client-go asks for first.
const aggregatedDiscovery = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// findResource returns the resource name of the list groupVersion.
func findResource(lists []*metav1.APIResourceList, groupVersion, name string) (metav1.APIResource, bool) {
	for _, list := range lists {
		if list.GroupVersion != groupVersion {
			continue
		}
		for _, r := range list.APIResources {
			if r.Name == name {
				return r, true
			}
		}
	}
	return metav1.APIResource{}, false
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

// expectResource checks the resource name of groupVersion in lists. From
// aggregated discovery (what kube-apiserver serves and client-go asks for
// first), a subresource has its parent's singularName, and a custom resource
// its group and version.
func expectResource(t *testing.T, lists []*metav1.APIResourceList, groupVersion, name string, want metav1.APIResource) {
	t.Helper()
	got, ok := findResource(lists, groupVersion, name)
	if !ok {
		t.Errorf("discovery has no %s in %s", name, groupVersion)
		return
	}
	if got.Kind != want.Kind || got.Namespaced != want.Namespaced || got.Group != want.Group || got.Version != want.Version ||
		got.SingularName != want.SingularName ||
		!slices.Equal(sorted(got.Verbs), sorted(want.Verbs)) ||
		!slices.Equal(got.ShortNames, want.ShortNames) || !slices.Equal(got.Categories, want.Categories) {
		t.Errorf("%s %s in discovery:\n got %+v\nwant %+v", groupVersion, name, got, want)
	}
}

var allVerbs = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

func TestDiscoveryAndRESTMapper(t *testing.T) {
	srv, ctx := start(t)
	log := &requestLog{}
	cfg := rest.CopyConfig(srv.Config)
	cfg.Wrap(log.wrap)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	version, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if version.Major != "1" || version.GitVersion == "" {
		t.Errorf("server version %+v, want major 1 and a gitVersion", version)
	}

	groups, lists, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatalf("ServerGroupsAndResources: %v", err)
	}
	// client-go asked for, and got, aggregated discovery.
	for _, path := range []string{"/api", "/apis"} {
		var found bool
		for _, e := range log.all() {
			if u, _ := url.Parse(e.uri); u.Path == path {
				found = true
				if e.status != 200 || e.respContentType != aggregatedDiscovery {
					t.Errorf("%v; want 200 with aggregated discovery (%s)", e, aggregatedDiscovery)
				}
			}
		}
		if !found {
			t.Errorf("discovery did not request %s", path)
		}
	}

	groupNames := map[string]metav1.APIGroup{}
	for _, g := range groups {
		groupNames[g.Name] = *g
	}
	apps, ok := groupNames["apps"]
	if !ok {
		t.Fatalf("no apps group in discovery: %v", groups)
	}
	if apps.PreferredVersion.GroupVersion != "apps/v1" || apps.PreferredVersion.Version != "v1" {
		t.Errorf("apps' preferred version: %+v, want apps/v1", apps.PreferredVersion)
	}
	if core, ok := groupNames[""]; !ok || core.PreferredVersion.GroupVersion != "v1" {
		t.Errorf("the core group in discovery: %+v (found %v), want preferred version v1", core, ok)
	}
	if _, ok := groupNames[gadgetGroup]; ok {
		t.Fatalf("%s is in discovery before its CRD exists", gadgetGroup)
	}

	expectResource(t, lists, "apps/v1", "deployments", metav1.APIResource{
		Kind: "Deployment", SingularName: "deployment", Namespaced: true, Verbs: allVerbs,
		ShortNames: []string{"deploy"}, Categories: []string{"all"},
	})
	expectResource(t, lists, "apps/v1", "deployments/scale", metav1.APIResource{
		Kind: "Scale", Group: "autoscaling", Version: "v1", SingularName: "deployment", Namespaced: true, Verbs: metav1.Verbs{"get", "patch", "update"},
	})
	expectResource(t, lists, "apps/v1", "deployments/status", metav1.APIResource{
		Kind: "Deployment", SingularName: "deployment", Namespaced: true, Verbs: metav1.Verbs{"get", "patch", "update"},
	})
	expectResource(t, lists, "v1", "configmaps", metav1.APIResource{
		Kind: "ConfigMap", SingularName: "configmap", Namespaced: true, Verbs: allVerbs, ShortNames: []string{"cm"},
	})
	expectResource(t, lists, "v1", "namespaces", metav1.APIResource{
		Kind: "Namespace", SingularName: "namespace", Namespaced: false,
		Verbs: metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"}, ShortNames: []string{"ns"},
	})
	expectResource(t, lists, "v1", "namespaces/finalize", metav1.APIResource{
		Kind: "Namespace", SingularName: "namespace", Namespaced: false, Verbs: metav1.Verbs{"update"},
	})
	expectResource(t, lists, "coordination.k8s.io/v1", "leases", metav1.APIResource{
		Kind: "Lease", SingularName: "lease", Namespaced: true, Verbs: allVerbs,
	})

	// A RESTMapper over cached discovery, with kubectl's short names.
	cached := memory.NewMemCacheClient(dc)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(cached)
	expander := restmapper.NewShortcutExpander(mapper, cached, func(w string) { t.Logf("shortcut expander: %s", w) })

	m, err := expander.RESTMapping(schema.GroupKind{Group: "apps", Kind: "Deployment"})
	if err != nil {
		t.Fatalf("RESTMapping apps Deployment: %v", err)
	}
	if m.Resource != (schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}) ||
		m.GroupVersionKind != (schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}) ||
		m.Scope.Name() != meta.RESTScopeNameNamespace {
		t.Errorf("RESTMapping apps Deployment: %+v (scope %s)", m, m.Scope.Name())
	}
	m, err = expander.RESTMapping(schema.GroupKind{Kind: "Namespace"}, "v1")
	if err != nil {
		t.Fatalf("RESTMapping Namespace: %v", err)
	}
	if m.Resource.Resource != "namespaces" || m.Scope.Name() != meta.RESTScopeNameRoot {
		t.Errorf("RESTMapping Namespace: resource %v scope %s, want namespaces, root", m.Resource, m.Scope.Name())
	}
	deploymentsGVR := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	for _, name := range []string{"deploy", "deployment", "deployments"} {
		gvr, err := expander.ResourceFor(schema.GroupVersionResource{Resource: name})
		if err != nil || gvr != deploymentsGVR {
			t.Errorf("ResourceFor %q: %v, %v; want %v", name, gvr, err, deploymentsGVR)
		}
	}
	gvk, err := expander.KindFor(schema.GroupVersionResource{Resource: "deploy"})
	if err != nil || gvk != (schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}) {
		t.Errorf("KindFor deploy: %v, %v; want apps/v1 Deployment", gvk, err)
	}
	if gvr, err := expander.ResourceFor(schema.GroupVersionResource{Resource: "cm"}); err != nil || gvr.Resource != "configmaps" {
		t.Errorf("ResourceFor cm: %v, %v; want v1 configmaps", gvr, err)
	}
	gadgetKind := schema.GroupKind{Group: gadgetGroup, Kind: "Gadget"}
	if _, err := expander.RESTMapping(gadgetKind); !meta.IsNoMatchError(err) {
		t.Fatalf("RESTMapping Gadget before its CRD: %v, want a no-match error", err)
	}

	// A CRD created now appears in discovery...
	createGadgetCRD(t, ctx, srv.Config)
	var fresh []*metav1.APIResourceList
	eventually(t, ctx, 15*time.Second, "gadgets in discovery", func(context.Context) error {
		dc, err := discovery.NewDiscoveryClientForConfig(srv.Config)
		if err != nil {
			return err
		}
		_, lists, err := dc.ServerGroupsAndResources()
		if err != nil {
			return err
		}
		if _, ok := findResource(lists, gadgetGroup+"/v1", "gadgets"); !ok {
			return fmt.Errorf("no gadgets in %s/v1", gadgetGroup)
		}
		fresh = lists
		return nil
	})
	expectResource(t, fresh, gadgetGroup+"/v1", "gadgets", metav1.APIResource{
		Kind: "Gadget", Group: gadgetGroup, Version: "v1", SingularName: "gadget", Namespaced: true, Verbs: allVerbs, ShortNames: []string{"gdg"},
	})
	expectResource(t, fresh, gadgetGroup+"/v1", "gadgets/status", metav1.APIResource{
		Kind: "Gadget", Group: gadgetGroup, Version: "v1", SingularName: "gadget", Namespaced: true, Verbs: metav1.Verbs{"get", "patch", "update"},
	})

	// ...and to the cached mapper after Reset (not before: its cache is
	// fresh and has no Gadget).
	if _, err := expander.RESTMapping(gadgetKind); !meta.IsNoMatchError(err) {
		t.Errorf("RESTMapping Gadget from the stale cache: %v, want a no-match error", err)
	}
	resettable, ok := expander.(meta.ResettableRESTMapper)
	if !ok {
		t.Fatalf("the shortcut expander (%T) cannot be reset", expander)
	}
	resettable.Reset()
	m, err = expander.RESTMapping(gadgetKind)
	if err != nil {
		t.Fatalf("RESTMapping Gadget after Reset: %v", err)
	}
	if m.Resource != gadgets || m.GroupVersionKind != gadgetKind.WithVersion("v1") || m.Scope.Name() != meta.RESTScopeNameNamespace {
		t.Errorf("RESTMapping Gadget: %+v (scope %s)", m, m.Scope.Name())
	}
	for _, name := range []string{"gdg", "gadget", "gadgets"} {
		gvr, err := expander.ResourceFor(schema.GroupVersionResource{Resource: name})
		if err != nil || gvr != gadgets {
			t.Errorf("ResourceFor %q: %v, %v; want %v", name, gvr, err, gadgets)
		}
	}
	// The built-ins are still there.
	if gvr, err := expander.ResourceFor(schema.GroupVersionResource{Resource: "deploy"}); err != nil || gvr != deploymentsGVR {
		t.Errorf("ResourceFor deploy after Reset: %v, %v", gvr, err)
	}
}
