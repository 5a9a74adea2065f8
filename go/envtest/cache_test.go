package envtest

import (
	"context"
	"net/url"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// syncRequests sorts the requests log holds for the collection at path:
// watches asking for the initial events (WatchList), the same answered 200,
// and lists.
func syncRequests(log *requestLog, path string) (watchLists, streamed, lists []string) {
	for _, r := range log.all() {
		u, err := url.Parse(r.uri)
		Expect(err).NotTo(HaveOccurred())
		if r.method != "GET" || u.Path != path {
			continue
		}
		q := u.Query()
		switch {
		case q.Get("watch") == "true" && q.Get("sendInitialEvents") == "true":
			Expect(q.Get("resourceVersionMatch")).To(Equal("NotOlderThan"), r.String())
			Expect(q.Get("allowWatchBookmarks")).To(Equal("true"), r.String())
			watchLists = append(watchLists, r.String())
			if r.status == 200 {
				streamed = append(streamed, r.String())
			}
		case q.Get("watch") != "true":
			lists = append(lists, r.String())
		}
	}
	return watchLists, streamed, lists
}

// expectWatchListSync checks that the initial state of path came from a
// WatchList stream, without a list.
func expectWatchListSync(log *requestLog, path string) {
	GinkgoHelper()
	if againstUpstream() && !etcdHasWatchProgress() {
		AddReportEntry("skipped against kube-apiserver: WatchList sync of " + path +
			" (it needs an etcd with RequestWatchProgress: 3.4.31+, 3.5.13+)")
		return
	}
	watchLists, streamed, lists := syncRequests(log, path)
	Expect(watchLists).NotTo(BeEmpty(), "no watch with sendInitialEvents=true on %s", path)
	Expect(streamed).NotTo(BeEmpty(), "no WatchList request on %s was answered 200: %v", path, watchLists)
	Expect(lists).To(BeEmpty(), "%s was listed (WatchList fell back to a list); WatchList requests: %v", path, watchLists)
}

var _ = Describe("the manager's informers and cached client", func() {
	It("stream their initial state with WatchList and follow creates, updates and deletes", func() {
		By("the informers started with the manager (Widgets, ConfigMaps) asked for WatchList first")
		// The Widget controller's informer starts with the controller, which
		// the manager may start after the suite's WaitForCacheSync returned.
		for _, path := range []string{"/apis/test.kubext.dev/v1/widgets", "/api/v1/configmaps"} {
			Eventually(func() []string {
				watchLists, _, _ := syncRequests(managerRequests, path)
				return watchLists
			}).WithTimeout(10*time.Second).ShouldNot(BeEmpty(), "no watch with sendInitialEvents=true on %s", path)
		}
		// (kube-apiserver may answer 429 while the watch cache of a CRD
		// created a moment before initializes, and the informer then lists:
		// Widgets are checked with an informer started now, below.)
		expectWatchListSync(managerRequests, "/api/v1/configmaps")

		ns := newNamespace("cache")
		cached := mgr.GetClient()

		By("a ConfigMap created directly is seen by the cached client, by name and by label")
		configMap := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "seen", Namespace: ns, Labels: map[string]string{"app": "cache-test"}},
			Data:       map[string]string{"k": "v1"},
		}
		Expect(k8sClient.Create(ctx, configMap)).To(Succeed())
		Eventually(func(g Gomega) {
			got := &corev1.ConfigMap{}
			g.Expect(cached.Get(ctx, key(ns, "seen"), got)).To(Succeed())
			g.Expect(got.Data).To(HaveKeyWithValue("k", "v1"))
			g.Expect(got.ResourceVersion).To(Equal(configMap.ResourceVersion))
			var list corev1.ConfigMapList
			g.Expect(cached.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{"app": "cache-test"})).To(Succeed())
			g.Expect(list.Items).To(HaveLen(1))
			g.Expect(list.Items[0].Name).To(Equal("seen"))
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

		By("an update reaches the cache")
		configMap.Data["k"] = "v2"
		Expect(k8sClient.Update(ctx, configMap)).To(Succeed())
		Eventually(func(g Gomega) {
			got := &corev1.ConfigMap{}
			g.Expect(cached.Get(ctx, key(ns, "seen"), got)).To(Succeed())
			g.Expect(got.Data).To(HaveKeyWithValue("k", "v2"))
			g.Expect(got.ResourceVersion).To(Equal(configMap.ResourceVersion))
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

		By("a delete reaches the cache")
		Expect(k8sClient.Delete(ctx, configMap)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(cached.Get(ctx, key(ns, "seen"), &corev1.ConfigMap{}))
		}).WithTimeout(timeout).WithPolling(interval).Should(BeTrue())

		By("a Widget (a custom resource) created directly is in the cache, as the webhook defaulted it")
		widget := &Widget{ObjectMeta: metav1.ObjectMeta{Name: "cached", Namespace: ns}}
		Expect(k8sClient.Create(ctx, widget)).To(Succeed())
		Eventually(func(g Gomega) {
			var list WidgetList
			g.Expect(cached.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			g.Expect(list.Items).To(HaveLen(1))
			g.Expect(list.Items[0].Spec.Replicas).To(HaveValue(BeEquivalentTo(1)))
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

		By("an informer started after the manager (Secrets, on first read) syncs by WatchList too")
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: ns},
			StringData: map[string]string{"password": "hunter2"},
		}
		Expect(k8sClient.Create(ctx, secret)).To(Succeed())
		Eventually(func(g Gomega) {
			got := &corev1.Secret{}
			g.Expect(cached.Get(ctx, key(ns, "late"), got)).To(Succeed())
			g.Expect(got.Data).To(HaveKeyWithValue("password", []byte("hunter2")))
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
		expectWatchListSync(managerRequests, "/api/v1/secrets")

		By("a new cache's Widget informer syncs by WatchList and sees what is there")
		newCacheRequests := &requestLog{}
		cacheConfig := rest.CopyConfig(cfg)
		cacheConfig.Wrap(newCacheRequests.wrap)
		newCache, err := cache.New(cacheConfig, cache.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		cacheCtx, stopCache := context.WithCancel(ctx)
		DeferCleanup(stopCache)
		_, err = newCache.GetInformer(cacheCtx, &Widget{})
		Expect(err).NotTo(HaveOccurred())
		go func() {
			defer GinkgoRecover()
			Expect(newCache.Start(cacheCtx)).To(Succeed())
		}()
		Expect(newCache.WaitForCacheSync(cacheCtx)).To(BeTrue())
		got := &Widget{}
		Expect(newCache.Get(ctx, key(ns, "cached"), got)).To(Succeed())
		Expect(got.Spec.Replicas).To(HaveValue(BeEquivalentTo(1)))
		expectWatchListSync(newCacheRequests, "/apis/test.kubext.dev/v1/widgets")
	})
})
