package clientgo

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// mirrorController keeps, for every ConfigMap labelled mirror=true, a Secret
// of the same name and data that the ConfigMap controls; it deletes the
// Secret when the ConfigMap goes or loses the label. It is built the way
// sample-controller is: shared informers whose event handlers enqueue keys
// on a typed rate-limiting workqueue, and workers that reconcile a key from
// the listers.
type mirrorController struct {
	client     kubernetes.Interface
	configMaps corelisters.ConfigMapLister
	secrets    corelisters.SecretLister
	queue      workqueue.TypedRateLimitingInterface[string]
	synced     []cache.InformerSynced

	mu         sync.Mutex
	reconciled map[string]int // key -> reconciles that ended without error
	failures   []error
}

func newMirrorController(t *testing.T, client kubernetes.Interface, factory informers.SharedInformerFactory) *mirrorController {
	configMaps := factory.Core().V1().ConfigMaps()
	secrets := factory.Core().V1().Secrets()
	c := &mirrorController{
		client:     client,
		configMaps: configMaps.Lister(),
		secrets:    secrets.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "mirror"}),
		reconciled: map[string]int{},
	}
	cmReg, err := configMaps.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
		DeleteFunc: c.enqueue,
	})
	if err != nil {
		t.Fatal(err)
	}
	secretReg, err := secrets.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueOwner,
		UpdateFunc: func(_, obj any) { c.enqueueOwner(obj) },
		DeleteFunc: c.enqueueOwner,
	})
	if err != nil {
		t.Fatal(err)
	}
	c.synced = []cache.InformerSynced{cmReg.HasSynced, secretReg.HasSynced}
	return c
}

func (c *mirrorController) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		c.fail(err)
		return
	}
	c.queue.Add(key)
}

// enqueueOwner enqueues the ConfigMap controlling a Secret, if any.
func (c *mirrorController) enqueueOwner(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	object, err := meta.Accessor(obj)
	if err != nil {
		c.fail(err)
		return
	}
	if owner := metav1.GetControllerOf(object); owner != nil && owner.APIVersion == "v1" && owner.Kind == "ConfigMap" {
		c.queue.Add(object.GetNamespace() + "/" + owner.Name)
	}
}

func (c *mirrorController) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failures = append(c.failures, err)
}

func (c *mirrorController) run(ctx context.Context, workers int) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for c.processNextItem(ctx) {
			}
		})
	}
	return &wg
}

func (c *mirrorController) processNextItem(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	if err := c.reconcile(ctx, key); err != nil {
		c.fail(fmt.Errorf("reconciling %s: %w", key, err))
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	c.mu.Lock()
	c.reconciled[key]++
	c.mu.Unlock()
	return true
}

func (c *mirrorController) reconcile(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	cm, err := c.configMaps.ConfigMaps(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		cm = nil
	} else if err != nil {
		return err
	}
	secret, err := c.secrets.Secrets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		secret = nil
	} else if err != nil {
		return err
	}

	if cm == nil || cm.Labels["mirror"] != "true" || cm.DeletionTimestamp != nil {
		if secret == nil {
			return nil
		}
		owner := metav1.GetControllerOf(secret)
		if owner == nil || owner.Kind != "ConfigMap" || owner.Name != name || (cm != nil && owner.UID != cm.UID) {
			return nil // not ours
		}
		err := c.client.CoreV1().Secrets(namespace).Delete(ctx, name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &secret.UID},
		})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}

	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	if secret == nil {
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Name:            name,
				Namespace:       namespace,
				Labels:          map[string]string{"mirrored-from": name},
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cm, corev1.SchemeGroupVersion.WithKind("ConfigMap"))},
			},
			Type: corev1.SecretTypeOpaque,
			Data: data,
		}
		_, err := c.client.CoreV1().Secrets(namespace).Create(ctx, secret, metav1.CreateOptions{})
		return err
	}
	if !metav1.IsControlledBy(secret, cm) {
		return fmt.Errorf("secret %s exists and is not controlled by ConfigMap %s (uid %s)", key, name, cm.UID)
	}
	if maps.EqualFunc(secret.Data, data, func(a, b []byte) bool { return string(a) == string(b) }) {
		return nil
	}
	secret = secret.DeepCopy()
	secret.Data = data
	_, err = c.client.CoreV1().Secrets(namespace).Update(ctx, secret, metav1.UpdateOptions{})
	return err
}

func (c *mirrorController) reconciles(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reconciled[key]
}

func (c *mirrorController) errors() []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]error(nil), c.failures...)
}

// secretData turns a Secret's data into strings for comparison.
func secretData(s *corev1.Secret) map[string]string {
	out := map[string]string{}
	for k, v := range s.Data {
		out[k] = string(v)
	}
	return out
}

func TestInformerWorkqueueController(t *testing.T) {
	if !clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient) {
		t.Fatal("client-go's WatchListClient feature gate is off (KUBE_FEATURE_WatchListClient=false?): " +
			"this test expects informers to sync by WatchList, client-go 0.37's default")
	}
	srv, ctx := start(t)
	admin := srv.Clientset(t)
	const ns = "mirror"
	createNamespace(t, ctx, admin, ns)

	// Present before the informers start: they must come with the initial
	// state the informers stream.
	before, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "before", Labels: map[string]string{"mirror": "true"}},
		Data:       map[string]string{"a": "1"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "plain"},
		Data:       map[string]string{"p": "q"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The controller's client records its requests.
	log := &requestLog{}
	cfg := rest.CopyConfig(srv.Config)
	cfg.Wrap(log.wrap)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	c := newMirrorController(t, client, factory)

	runCtx, stop := context.WithCancel(ctx)
	var workers *sync.WaitGroup
	t.Cleanup(func() {
		stop()
		c.queue.ShutDown()
		factory.Shutdown()
		if workers != nil {
			workers.Wait()
		}
	})
	factory.Start(runCtx.Done())

	syncCtx, syncCancel := context.WithTimeout(runCtx, 15*time.Second)
	defer syncCancel()
	for typ, ok := range factory.WaitForCacheSync(syncCtx.Done()) {
		if !ok {
			t.Fatalf("the %v informer did not sync within 15 s", typ)
		}
	}
	if !cache.WaitForCacheSync(syncCtx.Done(), c.synced...) {
		t.Fatal("the event handlers did not sync within 15 s")
	}
	if len(factory.WaitForCacheSync(syncCtx.Done())) != 2 {
		t.Fatal("the factory started no informers for ConfigMaps and Secrets")
	}

	// Both informers synced by WatchList: a watch with
	// sendInitialEvents=true answered 200, and no list.
	for _, path := range []string{"/api/v1/namespaces/" + ns + "/configmaps", "/api/v1/namespaces/" + ns + "/secrets"} {
		var watchLists, streamed, lists []string
		for _, e := range log.all() {
			u, err := url.Parse(e.uri)
			if err != nil {
				t.Fatal(err)
			}
			if e.method != "GET" || u.Path != path {
				continue
			}
			q := u.Query()
			switch {
			case e.watch && q.Get("sendInitialEvents") == "true":
				if q.Get("resourceVersionMatch") != "NotOlderThan" || q.Get("allowWatchBookmarks") != "true" {
					t.Errorf("WatchList request without resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true: %v", e)
				}
				watchLists = append(watchLists, e.String())
				if e.status == 200 {
					streamed = append(streamed, e.String())
				}
			case !e.watch:
				lists = append(lists, e.String())
			}
		}
		if len(watchLists) == 0 {
			t.Errorf("the informer on %s sent no watch with sendInitialEvents=true", path)
		}
		if len(streamed) == 0 {
			t.Errorf("no WatchList request on %s was answered 200: %v", path, watchLists)
		}
		if len(lists) != 0 {
			t.Errorf("the informer on %s listed (WatchList fell back to a list): %v; WatchList requests: %v", path, lists, watchLists)
		}
	}
	// The initial state came with the sync.
	if _, err := c.configMaps.ConfigMaps(ns).Get("before"); err != nil {
		t.Errorf("the ConfigMap lister lacks %s/before after the sync: %v", ns, err)
	}

	workers = c.run(runCtx, 2)

	// expectMirror waits for the Secret name with data, controlled by the
	// ConfigMap of that name, through the API and through the lister.
	expectMirror := func(name string, want map[string]string) *corev1.Secret {
		t.Helper()
		var secret *corev1.Secret
		eventually(t, ctx, 10*time.Second, "Secret "+name+" mirroring its ConfigMap", func(ctx context.Context) error {
			s, err := admin.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got := secretData(s); !maps.Equal(got, want) {
				return fmt.Errorf("data %v, want %v", got, want)
			}
			secret = s
			return nil
		})
		eventually(t, ctx, 10*time.Second, "the Secret lister seeing "+name, func(context.Context) error {
			s, err := c.secrets.Secrets(ns).Get(name)
			if err != nil {
				return err
			}
			if got := secretData(s); !maps.Equal(got, want) {
				return fmt.Errorf("data %v, want %v", got, want)
			}
			if s.ResourceVersion != secret.ResourceVersion {
				return fmt.Errorf("resourceVersion %s, the API's %s", s.ResourceVersion, secret.ResourceVersion)
			}
			return nil
		})
		return secret
	}
	expectGone := func(name string) {
		t.Helper()
		eventually(t, ctx, 10*time.Second, "Secret "+name+" deleted", func(ctx context.Context) error {
			_, err := admin.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err == nil {
				return errors.New("it still exists")
			}
			return err
		})
		eventually(t, ctx, 10*time.Second, "the Secret lister losing "+name, func(context.Context) error {
			_, err := c.secrets.Secrets(ns).Get(name)
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("lister Get: %v", err)
		})
	}
	expectDrained := func() {
		t.Helper()
		eventually(t, ctx, 10*time.Second, "the queue draining", func(context.Context) error {
			if n := c.queue.Len(); n != 0 {
				return fmt.Errorf("queue.Len() = %d", n)
			}
			return nil
		})
		if errs := c.errors(); len(errs) != 0 {
			t.Fatalf("the controller failed: %v", errs)
		}
	}

	// The ConfigMap that was there before the controller started.
	secret := expectMirror("before", map[string]string{"a": "1"})
	if !metav1.IsControlledBy(secret, before) {
		t.Errorf("Secret before's ownerReferences %+v do not name ConfigMap before (uid %s) as controller", secret.OwnerReferences, before.UID)
	}
	if len(secret.OwnerReferences) != 1 {
		t.Fatalf("Secret before has ownerReferences %+v, want one", secret.OwnerReferences)
	}
	ref := secret.OwnerReferences[0]
	if ref.APIVersion != "v1" || ref.Kind != "ConfigMap" || ref.Name != "before" || ref.UID != before.UID ||
		ref.Controller == nil || !*ref.Controller || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("Secret before's ownerReference is %+v, want v1 ConfigMap before uid %s controller and blockOwnerDeletion", ref, before.UID)
	}
	if secret.Type != corev1.SecretTypeOpaque {
		t.Errorf("Secret before has type %q, want Opaque", secret.Type)
	}
	expectDrained()

	// A new ConfigMap, then an update of its data.
	later, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "later", Labels: map[string]string{"mirror": "true"}},
		Data:       map[string]string{"x": "y"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created := expectMirror("later", map[string]string{"x": "y"})
	later.Data = map[string]string{"x": "z", "w": "v"}
	if later, err = admin.CoreV1().ConfigMaps(ns).Update(ctx, later, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	updated := expectMirror("later", map[string]string{"x": "z", "w": "v"})
	if updated.UID != created.UID {
		t.Errorf("the Secret was replaced (uid %s, then %s), not updated", created.UID, updated.UID)
	}
	expectDrained()

	// Someone else changes the Secret: its event enqueues the owner, whose
	// reconcile restores it.
	tampered := updated.DeepCopy()
	tampered.Data = map[string][]byte{"x": []byte("tampered")}
	if _, err := admin.CoreV1().Secrets(ns).Update(ctx, tampered, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expectMirror("later", map[string]string{"x": "z", "w": "v"})
	expectDrained()

	// The unlabelled ConfigMap was reconciled and got no Secret.
	if n := c.reconciles(ns + "/plain"); n == 0 {
		t.Errorf("%s/plain was never reconciled", ns)
	}
	if _, err := admin.CoreV1().Secrets(ns).Get(ctx, "plain", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Secret plain: got error %v, want NotFound (its ConfigMap is not labelled mirror=true)", err)
	}

	// Dropping the label, then deleting a ConfigMap, removes its Secret.
	patch := []byte(`{"metadata":{"labels":{"mirror":null}}}`)
	if _, err := admin.CoreV1().ConfigMaps(ns).Patch(ctx, "later", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	expectGone("later")
	if err := admin.CoreV1().ConfigMaps(ns).Delete(ctx, "before", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expectGone("before")
	expectDrained()
	if _, err := c.configMaps.ConfigMaps(ns).Get("before"); !apierrors.IsNotFound(err) {
		t.Errorf("the ConfigMap lister still has %s/before after its deletion (err %v)", ns, err)
	}
}
