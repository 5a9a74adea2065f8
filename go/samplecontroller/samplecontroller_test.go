// Package samplecontroller runs upstream's k8s.io/sample-controller, built
// unchanged from its own module by scripts/upstream, against a real kubext,
// and checks what its README promises: a Foo becomes a Deployment it owns,
// with the Foo's replicas; a change of the Foo's spec.replicas is followed;
// the Foo's status.availableReplicas mirrors the Deployment's status; events
// are recorded; deleting the Foo garbage-collects the Deployment.
package samplecontroller

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"kubext.dev/go/internal/kubexttest"
)

const (
	// The nearest release of 1.33's minor (what kubext serves) that the module
	// proxy serves: it refuses v0.33.5 to v0.33.13.
	version = "0.37.1"
	timeout = 30 * time.Second
	// kubext's garbage collector scans owners on an interval.
	gcTimeout = 90 * time.Second
)

var fooResource = schema.GroupVersionResource{Group: "samplecontroller.k8s.io", Version: "v1alpha1", Resource: "foos"}

func TestSampleController(t *testing.T) {
	srv := kubexttest.Start(t)
	bin := kubexttest.Upstream(t, "sample-controller", version)
	examples := filepath.Join(kubexttest.ModuleDir(t, "k8s.io/sample-controller", version), "artifacts", "examples")
	ctx := context.Background()
	clientset := srv.Clientset(t)
	foos := dynamic.NewForConfigOrDie(srv.Config).Resource(fooResource).Namespace("default")

	// The README's steps: the CRD (with the status subresource), the
	// controller, then example-foo.
	srv.Kubectl(t, "create", "-f", filepath.Join(examples, "crd-status-subresource.yaml"))
	srv.Kubectl(t, "wait", "--for=condition=Established", "--timeout=30s", "crd/foos.samplecontroller.k8s.io")
	controller := kubexttest.StartProcess(t, bin, "-kubeconfig", srv.Kubeconfig)
	srv.Kubectl(t, "create", "-f", filepath.Join(examples, "example-foo.yaml"))
	foo, err := foos.Get(ctx, "example-foo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fooReplicas, _, _ := unstructured.NestedInt64(foo.Object, "spec", "replicas")
	deploymentName, _, _ := unstructured.NestedString(foo.Object, "spec", "deploymentName")
	if fooReplicas != 1 || deploymentName != "example-foo" {
		t.Fatalf("example-foo.yaml changed: replicas %d, deploymentName %q", fooReplicas, deploymentName)
	}

	t.Run("the Deployment is owned by the Foo and has its replicas", func(t *testing.T) {
		deployment := eventually(t, timeout, func() (*deploymentView, error) {
			return getDeployment(ctx, clientset, deploymentName)
		})
		owners := deployment.OwnerReferences
		if len(owners) != 1 || owners[0].UID != foo.GetUID() || owners[0].Kind != "Foo" ||
			owners[0].APIVersion != "samplecontroller.k8s.io/v1alpha1" ||
			owners[0].Controller == nil || !*owners[0].Controller {
			t.Fatalf("ownerReferences %+v, want the Foo %s as controller", owners, foo.GetUID())
		}
		if deployment.Replicas != 1 {
			t.Fatalf("Deployment replicas %d, want the Foo's 1", deployment.Replicas)
		}
		if deployment.Image != "nginx:latest" || deployment.Labels["controller"] != "example-foo" {
			t.Fatalf("Deployment template: image %q, labels %v", deployment.Image, deployment.Labels)
		}
	})

	t.Run("a change of the Foo's replicas is followed", func(t *testing.T) {
		patch := []byte(`{"spec":{"replicas":3}}`)
		if _, err := foos.Patch(ctx, "example-foo", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, timeout, func() (*deploymentView, error) {
			d, err := getDeployment(ctx, clientset, deploymentName)
			if err == nil && d.Replicas != 3 {
				err = fmt.Errorf("Deployment replicas %d, want 3", d.Replicas)
			}
			return d, err
		})
	})

	t.Run("the Foo's status mirrors the Deployment's available replicas", func(t *testing.T) {
		// No kubelet runs: the Deployment's status is patched by hand, as the
		// deployment controller would after pods became available.
		status := []byte(`{"status":{"replicas":3,"readyReplicas":2,"availableReplicas":2}}`)
		if _, err := clientset.AppsV1().Deployments("default").Patch(ctx, deploymentName, types.MergePatchType,
			status, metav1.PatchOptions{}, "status"); err != nil {
			t.Fatal(err)
		}
		eventually(t, timeout, func() (int64, error) {
			foo, err := foos.Get(ctx, "example-foo", metav1.GetOptions{})
			if err != nil {
				return 0, err
			}
			available, found, _ := unstructured.NestedInt64(foo.Object, "status", "availableReplicas")
			if !found || available != 2 {
				return available, fmt.Errorf("Foo status.availableReplicas %d (found %v), want 2", available, found)
			}
			return available, nil
		})
	})

	t.Run("the controller records Synced events for the Foo", func(t *testing.T) {
		events := eventually(t, timeout, func() ([]corev1.Event, error) {
			list, err := clientset.CoreV1().Events("default").List(ctx, metav1.ListOptions{
				FieldSelector: "involvedObject.kind=Foo,involvedObject.name=example-foo,reason=Synced",
			})
			if err == nil && len(list.Items) == 0 {
				err = fmt.Errorf("no Synced event for the Foo yet")
			}
			if err != nil {
				return nil, err
			}
			return list.Items, nil
		})
		event := events[0]
		if event.Type != corev1.EventTypeNormal || event.Message != "Foo synced successfully" ||
			event.Source.Component != "sample-controller" || event.InvolvedObject.UID != foo.GetUID() {
			t.Fatalf("event %+v", event)
		}
	})

	t.Run("deleting the Foo garbage-collects its Deployment", func(t *testing.T) {
		if err := foos.Delete(ctx, "example-foo", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, gcTimeout, func() (bool, error) {
			_, err := clientset.AppsV1().Deployments("default").Get(ctx, deploymentName, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, fmt.Errorf("Deployment still there (err %v)", err)
		})
	})

	if controller.Exited() {
		t.Fatalf("sample-controller exited (log %s)", controller.Log)
	}
}

// deploymentView is what the test reads of the Deployment.
type deploymentView struct {
	OwnerReferences []metav1.OwnerReference
	Replicas        int32
	Image           string
	Labels          map[string]string
}

func getDeployment(ctx context.Context, clientset *kubernetes.Clientset, name string) (*deploymentView, error) {
	d, err := clientset.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	view := &deploymentView{OwnerReferences: d.OwnerReferences, Labels: d.Spec.Template.Labels}
	if d.Spec.Replicas != nil {
		view.Replicas = *d.Spec.Replicas
	}
	if containers := d.Spec.Template.Spec.Containers; len(containers) > 0 {
		view.Image = containers[0].Image
	}
	return view, nil
}

// eventually retries get until it succeeds or the timeout passes.
func eventually[T any](t *testing.T, timeout time.Duration, get func() (T, error)) T {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		value, err := get()
		if err == nil {
			return value
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %v", timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
