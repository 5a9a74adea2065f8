package clientgo

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const protobuf = runtime.ContentTypeProtobuf // application/vnd.kubernetes.protobuf

// protobufMagic starts every protobuf-encoded object kube-apiserver sends
// (the runtime.Unknown envelope's prefix).
var protobufMagic = []byte{'k', '8', 's', 0}

// TestProtobufBuiltins drives ConfigMaps and Pods with a client that sends
// protobuf and asks for protobuf, as kube-apiserver serves built-in types:
// once accepting protobuf alone, once protobuf then JSON (kubectl's and
// controller-runtime's choice). kube-apiserver answers protobuf either way.
func TestProtobufBuiltins(t *testing.T) {
	srv, ctx := start(t)
	for _, tc := range []struct{ name, ns, accept string }{
		{"accept protobuf", "proto", protobuf},
		{"accept protobuf then json", "proto-json", protobuf + "," + runtime.ContentTypeJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			createNamespace(t, ctx, srv.Clientset(t), tc.ns)
			exerciseProtobuf(t, ctx, srv.Config, tc.ns, tc.accept)
		})
	}
	t.Run("client-go defaults", func(t *testing.T) {
		createNamespace(t, ctx, srv.Clientset(t), "proto-default")
		protobufByDefault(t, ctx, srv.Config, "proto-default")
	})
}

// protobufByDefault checks what a client-go 0.37 clientset made from a bare
// rest.Config does: its typed clients of built-in types (generated with
// --prefers-protobuf) send protobuf and accept protobuf, then JSON. That
// includes subresources (a Deployment's scale) and apiextensions' CRDs.
func protobufByDefault(t *testing.T, ctx context.Context, config *rest.Config, ns string) {
	log := &requestLog{}
	cfg := rest.CopyConfig(config)
	cfg.Wrap(log.wrap)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	check := func(step, method string) {
		t.Helper()
		exchanges := log.all()
		log.reset()
		if len(exchanges) != 1 {
			t.Errorf("%s: %d requests, want 1: %v", step, len(exchanges), exchanges)
			return
		}
		e := exchanges[0]
		if e.method != method || (method != "GET" && e.reqContentType != protobuf) {
			t.Errorf("%s: client-go sent %v; want a %s with a protobuf body", step, e, method)
		}
		if e.status < 200 || e.status > 299 || e.respContentType != protobuf || !bytes.HasPrefix(e.respBodyPrefix, protobufMagic) {
			t.Errorf("%s: %v with a body starting %q; want a success in protobuf", step, e, e.respBodyPrefix)
		}
	}

	cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Data:       map[string]string{"k": "v"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Errorf("creating a ConfigMap: %v", err)
	} else if cm.Data["k"] != "v" {
		t.Errorf("created ConfigMap has data %v", cm.Data)
	}
	check("create ConfigMap", "POST")

	replicas := int32(1)
	d, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "default"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "default"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a Deployment: %v", err)
	}
	check("create Deployment", "POST")
	scale, err := cs.AppsV1().Deployments(ns).GetScale(ctx, d.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting the Deployment's scale: %v", err)
	}
	check("get scale", "GET")
	scale.Spec.Replicas = 3
	scale, err = cs.AppsV1().Deployments(ns).UpdateScale(ctx, d.Name, scale, metav1.UpdateOptions{})
	if err != nil {
		t.Errorf("updating the Deployment's scale: %v", err)
	} else if scale.Spec.Replicas != 3 {
		t.Errorf("scale after the update: spec.replicas %d, want 3", scale.Spec.Replicas)
	}
	check("update scale", "PUT")

	extensions, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	crd := gadgetCRD()
	crd.Name = "gadgets.protobuf." + gadgetGroup
	crd.Spec.Group = "protobuf." + gadgetGroup
	created, err := extensions.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
	if err != nil {
		t.Errorf("creating a CRD: %v", err)
	} else if created.Spec.Names.Kind != "Gadget" || created.Spec.Versions[0].Schema == nil ||
		created.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["size"].Minimum == nil ||
		created.Spec.Versions[0].Subresources == nil || created.Spec.Versions[0].Subresources.Status == nil {
		t.Errorf("created CRD lost part of its spec: %+v", created.Spec)
	}
	check("create CRD", "POST")
}

func exerciseProtobuf(t *testing.T, ctx context.Context, config *rest.Config, ns, accept string) {
	log := &requestLog{}
	cfg := rest.CopyConfig(config)
	cfg.ContentType = protobuf
	cfg.AcceptContentTypes = accept
	cfg.Wrap(log.wrap)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	// checkExchanges checks that every exchange since the last call sent
	// protobuf (when it had a body) and was answered in protobuf: a
	// protobuf object, or a protobuf watch stream.
	checkExchanges := func(step string, wantN int) {
		t.Helper()
		exchanges := log.all()
		log.reset()
		if len(exchanges) < wantN {
			t.Errorf("%s: %d requests recorded, want at least %d: %v", step, len(exchanges), wantN, exchanges)
		}
		for _, e := range exchanges {
			if (e.method == "POST" || e.method == "PUT") && e.reqContentType != protobuf {
				t.Errorf("%s: the client sent %v with Content-Type %q, want %q", step, e, e.reqContentType, protobuf)
			}
			want := protobuf
			if e.watch {
				want = protobuf + ";stream=watch"
			}
			if e.respContentType != want {
				t.Errorf("%s: %v answered with Content-Type %q, want %q", step, e, e.respContentType, want)
			}
			if !e.watch && !bytes.HasPrefix(e.respBodyPrefix, protobufMagic) {
				t.Errorf("%s: %v answered a body starting %q, want the protobuf magic %q", step, e, e.respBodyPrefix, protobufMagic)
			}
		}
	}

	cms := cs.CoreV1().ConfigMaps(ns)

	// list, then watch from the list's resourceVersion.
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if list.ResourceVersion == "" {
		t.Error("the ConfigMap list has no resourceVersion")
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	checkExchanges("list and watch", 2)

	// create
	cm, err := cms.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "pb", Labels: map[string]string{"wire": "protobuf"}},
		Data:       map[string]string{"text": "hello"},
		BinaryData: map[string][]byte{"bin": {0, 1, 2, 0xff}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.UID == "" || cm.ResourceVersion == "" || cm.CreationTimestamp.IsZero() || cm.Namespace != ns {
		t.Errorf("created ConfigMap lacks server-set metadata: %+v", cm.ObjectMeta)
	}
	if cm.Data["text"] != "hello" || !bytes.Equal(cm.BinaryData["bin"], []byte{0, 1, 2, 0xff}) {
		t.Errorf("created ConfigMap has data %v, binaryData %v", cm.Data, cm.BinaryData)
	}
	checkExchanges("create", 1)

	// get
	got, err := cms.Get(ctx, "pb", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.UID != cm.UID || got.ResourceVersion != cm.ResourceVersion || got.Data["text"] != "hello" ||
		!bytes.Equal(got.BinaryData["bin"], []byte{0, 1, 2, 0xff}) || got.Labels["wire"] != "protobuf" {
		t.Errorf("got %+v, want what was created: %+v", got, cm)
	}
	checkExchanges("get", 1)

	// update
	got.Data["text"] = "updated"
	updated, err := cms.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Data["text"] != "updated" || updated.ResourceVersion == got.ResourceVersion {
		t.Errorf("update answered data %v, resourceVersion %s (was %s)", updated.Data, updated.ResourceVersion, got.ResourceVersion)
	}
	checkExchanges("update", 1)

	// list with a label selector
	list, err = cms.List(ctx, metav1.ListOptions{LabelSelector: "wire=protobuf"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "pb" || list.Items[0].Data["text"] != "updated" {
		t.Errorf("list wire=protobuf: %+v, want ConfigMap pb with text=updated", list.Items)
	}
	checkExchanges("list", 1)

	// a NotFound Status comes back in protobuf too, and decodes
	_, err = cms.Get(ctx, "absent", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("get absent: %v, want NotFound", err)
	} else if want := `configmaps "absent" not found`; err.Error() != want {
		t.Errorf("get absent: %q, want %q", err.Error(), want)
	}
	checkExchanges("get absent", 1)

	// the watch, decoding protobuf frames, saw ADDED then MODIFIED
	for _, want := range []struct {
		typ  watch.EventType
		text string
	}{{watch.Added, "hello"}, {watch.Modified, "updated"}} {
		ev := nextEvent(t, w, "pb")
		obj, isCM := ev.Object.(*corev1.ConfigMap)
		if ev.Type != want.typ || !isCM || obj.Data["text"] != want.text {
			t.Fatalf("watch event %s %#v, want %s of ConfigMap pb with text=%s", ev.Type, ev.Object, want.typ, want.text)
		}
	}

	// Pods: create (defaulted by the server), get, update, list, delete.
	pods := cs.CoreV1().Pods(ns)
	pod, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pb-pod", Labels: map[string]string{"app": "pb"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:  "main",
			Image: "registry.k8s.io/pause:3.10",
			Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
		}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// kube-apiserver's defaulting (pkg/apis/core/v1/defaults.go).
	spec := pod.Spec
	if spec.RestartPolicy != corev1.RestartPolicyAlways || spec.DNSPolicy != corev1.DNSClusterFirst ||
		spec.SchedulerName != corev1.DefaultSchedulerName ||
		spec.TerminationGracePeriodSeconds == nil || *spec.TerminationGracePeriodSeconds != 30 {
		t.Errorf("pod spec not defaulted as kube-apiserver does: restartPolicy %q dnsPolicy %q schedulerName %q terminationGracePeriodSeconds %v",
			spec.RestartPolicy, spec.DNSPolicy, spec.SchedulerName, spec.TerminationGracePeriodSeconds)
	}
	if c := spec.Containers[0]; c.TerminationMessagePath != "/dev/termination-log" ||
		c.TerminationMessagePolicy != corev1.TerminationMessageReadFile || c.ImagePullPolicy != corev1.PullIfNotPresent ||
		len(c.Ports) != 1 || c.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("container not defaulted as kube-apiserver does: terminationMessagePath %q terminationMessagePolicy %q imagePullPolicy %q ports %+v",
			c.TerminationMessagePath, c.TerminationMessagePolicy, c.ImagePullPolicy, c.Ports)
	}
	if pod.Status.Phase != corev1.PodPending {
		t.Errorf("new pod's status.phase is %q, want Pending", pod.Status.Phase)
	}
	checkExchanges("create pod", 1)

	pod, err = pods.Get(ctx, "pb-pod", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Labels["tier"] = "web"
	pod.Spec.Containers[0].Image = "registry.k8s.io/pause:3.9"
	pod, err = pods.Update(ctx, pod, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Labels["tier"] != "web" || pod.Spec.Containers[0].Image != "registry.k8s.io/pause:3.9" {
		t.Errorf("updated pod has labels %v, image %q", pod.Labels, pod.Spec.Containers[0].Image)
	}
	podList, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "app=pb,tier=web"})
	if err != nil {
		t.Fatal(err)
	}
	if len(podList.Items) != 1 || podList.Items[0].Name != "pb-pod" {
		t.Errorf("pods app=pb,tier=web: %v, want pb-pod", podList.Items)
	}
	// A pod update changing something immutable is rejected as Invalid.
	bad := pod.DeepCopy()
	bad.Spec.Containers[0].Name = "renamed"
	if _, err := pods.Update(ctx, bad, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("renaming a container: %v, want 422 Invalid", err)
	} else if !strings.Contains(err.Error(), "spec: Forbidden: pod updates may not change fields other than") {
		t.Errorf("renaming a container: %q, want kube-apiserver's %q", err.Error(), "spec: Forbidden: pod updates may not change fields other than ...")
	}
	checkExchanges("get, update, list pods", 4)

	grace := int64(0)
	if err := pods.Delete(ctx, "pb-pod", metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "pb", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	checkExchanges("delete", 2)

	if ev := nextEvent(t, w, "pb"); ev.Type != watch.Deleted {
		t.Errorf("watch event %s, want DELETED", ev.Type)
	}
}

// nextEvent returns w's next event about the object name, skipping others
// (such as the kube-root-ca.crt ConfigMap published in new namespaces).
func nextEvent(t *testing.T, w watch.Interface, name string) watch.Event {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("the watch closed before an event about %s", name)
			}
			if ev.Type == watch.Error {
				t.Fatalf("watch error event: %#v", ev.Object)
			}
			if o, err := meta.Accessor(ev.Object); err == nil && o.GetName() != name {
				continue
			}
			return ev
		case <-timeout:
			t.Fatalf("no watch event about %s within 10 s", name)
		}
	}
}
