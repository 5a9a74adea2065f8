package clientgo

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

func nestedInt(t *testing.T, obj *unstructured.Unstructured, fields ...string) int64 {
	t.Helper()
	v, found, err := unstructured.NestedInt64(obj.Object, fields...)
	if err != nil || !found {
		t.Fatalf("%s: %s is %v (found %v, err %v)", obj.GetName(), strings.Join(fields, "."), v, found, err)
	}
	return v
}

func nestedString(obj *unstructured.Unstructured, fields ...string) string {
	v, _, _ := unstructured.NestedString(obj.Object, fields...)
	return v
}

func hasField(obj *unstructured.Unstructured, fields ...string) bool {
	_, found, _ := unstructured.NestedFieldNoCopy(obj.Object, fields...)
	return found
}

func TestDynamicClientCustomResources(t *testing.T) {
	srv, ctx := start(t)
	const ns = "dynamic"
	createNamespace(t, ctx, srv.Clientset(t), ns)
	createGadgetCRD(t, ctx, srv.Config)

	warnings := &warningLog{}
	cfg := rest.CopyConfig(srv.Config)
	cfg.WarningHandler = warnings
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res := dyn.Resource(gadgets).Namespace(ns)

	// A watch from the (empty) list's resourceVersion sees everything below.
	list, err := res.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 || list.GetResourceVersion() == "" {
		t.Fatalf("initial list: %d items, resourceVersion %q; want none and a resourceVersion", len(list.Items), list.GetResourceVersion())
	}
	if list.GetAPIVersion() != gadgetGroup+"/v1" || list.GetKind() != "GadgetList" {
		t.Errorf("list is %s %s, want %s/v1 GadgetList", list.GetAPIVersion(), list.GetKind(), gadgetGroup)
	}
	w, err := res.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// What the watch must report about "one", in order: each event's type
	// and the resourceVersion the write answered.
	type expected struct {
		typ watch.EventType
		rv  string
	}
	var want []expected

	// create: unknown fields are pruned (but kept under spec.extra, which
	// preserves them), status is dropped (the status subresource is on).
	one, err := res.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gadgetGroup + "/v1",
		"kind":       "Gadget",
		"metadata":   map[string]any{"name": "one", "labels": map[string]any{"app": "one"}},
		"spec": map[string]any{
			"size":    int64(1),
			"color":   "red",
			"unknown": "pruned",
			"extra":   map[string]any{"anything": map[string]any{"nested": true}},
		},
		"status":     map[string]any{"phase": "dropped"},
		"unknownTop": "pruned",
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, expected{watch.Added, one.GetResourceVersion()})
	if one.GetUID() == "" || one.GetGeneration() != 1 || one.GetNamespace() != ns ||
		one.GetAPIVersion() != gadgetGroup+"/v1" || one.GetKind() != "Gadget" {
		t.Errorf("created: uid %q generation %d namespace %q %s %s", one.GetUID(), one.GetGeneration(), one.GetNamespace(), one.GetAPIVersion(), one.GetKind())
	}
	if hasField(one, "spec", "unknown") || hasField(one, "unknownTop") {
		t.Errorf("unknown fields were not pruned on create: %v", one.Object)
	}
	// fieldValidation defaults to Warn: each pruned field is reported.
	warnings.expect(t, "create", `unknown field "spec.unknown"`, `unknown field "unknownTop"`)
	if nested, _, _ := unstructured.NestedBool(one.Object, "spec", "extra", "anything", "nested"); !nested {
		t.Errorf("spec.extra (x-kubernetes-preserve-unknown-fields) lost its content: %v", one.Object["spec"])
	}
	if hasField(one, "status") {
		t.Errorf("status was kept on create although the status subresource is enabled: %v", one.Object["status"])
	}
	if nestedInt(t, one, "spec", "size") != 1 || nestedString(one, "spec", "color") != "red" {
		t.Errorf("created spec: %v", one.Object["spec"])
	}

	// get
	got, err := res.Get(ctx, "one", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.GetResourceVersion() != one.GetResourceVersion() || got.GetUID() != one.GetUID() || hasField(got, "spec", "unknown") ||
		nestedString(got, "spec", "color") != "red" {
		t.Errorf("get: %v, want what create answered: %v", got.Object, one.Object)
	}

	// a second one, and lists by label
	if _, err := res.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gadgetGroup + "/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": "two", "labels": map[string]any{"app": "two"}},
		"spec":     map[string]any{"size": int64(2)},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for selector, names := range map[string][]string{"app=one": {"one"}, "app in (one,two)": {"one", "two"}, "app!=one": {"two"}, "app=three": nil} {
		list, err := res.List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			t.Fatalf("list %s: %v", selector, err)
		}
		var gotNames []string
		for _, item := range list.Items {
			gotNames = append(gotNames, item.GetName())
			if item.GetAPIVersion() != gadgetGroup+"/v1" || item.GetKind() != "Gadget" {
				t.Errorf("list %s: item %s is %s %s", selector, item.GetName(), item.GetAPIVersion(), item.GetKind())
			}
		}
		if fmt.Sprint(gotNames) != fmt.Sprint(names) {
			t.Errorf("list %s: %v, want %v", selector, gotNames, names)
		}
	}

	// schema validation
	_, err = res.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gadgetGroup + "/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": "bad"},
		"spec":     map[string]any{"size": "big"},
	}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("creating a Gadget with spec.size a string: %v, want 422 Invalid", err)
	} else if want := `Gadget.clientgo.kubext.dev "bad" is invalid: spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"`; err.Error() != want {
		t.Errorf("creating a Gadget with spec.size a string: %q, want %q", err.Error(), want)
	}
	_, err = res.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gadgetGroup + "/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": "bad"},
		"spec":     map[string]any{"size": int64(-1)},
	}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("creating a Gadget with spec.size -1: %v, want 422 Invalid", err)
	} else if want := `Gadget.clientgo.kubext.dev "bad" is invalid: spec.size: Invalid value: -1: spec.size in body should be greater than or equal to 0`; err.Error() != want {
		t.Errorf("creating a Gadget with spec.size -1: %q, want %q", err.Error(), want)
	}

	// update: spec changes (generation 2), unknown fields are pruned, a
	// status in the body is ignored.
	got.Object["spec"].(map[string]any)["size"] = int64(3)
	got.Object["spec"].(map[string]any)["unknown2"] = "pruned"
	got.Object["status"] = map[string]any{"phase": "ignored"}
	updated, err := res.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, expected{watch.Modified, updated.GetResourceVersion()})
	warnings.expect(t, "update", `unknown field "spec.unknown2"`)
	if nestedInt(t, updated, "spec", "size") != 3 || updated.GetGeneration() != 2 || hasField(updated, "spec", "unknown2") || hasField(updated, "status") {
		t.Errorf("after update: generation %d, %v; want generation 2, spec.size 3, no spec.unknown2, no status", updated.GetGeneration(), updated.Object)
	}
	// An update from a stale resourceVersion conflicts.
	if _, err := res.Update(ctx, got, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("update with the stale resourceVersion %s: %v, want 409 Conflict", got.GetResourceVersion(), err)
	} else if want := `Operation cannot be fulfilled on gadgets.clientgo.kubext.dev "one": the object has been modified; please apply your changes to the latest version and try again`; err.Error() != want {
		t.Errorf("stale update: %q, want %q", err.Error(), want)
	}

	warnings.take()

	// UpdateStatus: status changes (unknown fields pruned), spec and
	// generation do not.
	withStatus := updated.DeepCopy()
	withStatus.Object["status"] = map[string]any{"phase": "Ready", "observedGeneration": int64(2), "bogus": int64(1)}
	withStatus.Object["spec"].(map[string]any)["size"] = int64(100)
	statusUpdated, err := res.UpdateStatus(ctx, withStatus, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, expected{watch.Modified, statusUpdated.GetResourceVersion()})
	warnings.expect(t, "UpdateStatus", `unknown field "status.bogus"`)
	if nestedString(statusUpdated, "status", "phase") != "Ready" || nestedInt(t, statusUpdated, "status", "observedGeneration") != 2 ||
		hasField(statusUpdated, "status", "bogus") || nestedInt(t, statusUpdated, "spec", "size") != 3 || statusUpdated.GetGeneration() != 2 {
		t.Errorf("after UpdateStatus: generation %d, %v; want status.phase Ready, observedGeneration 2, no status.bogus, spec.size still 3, generation 2",
			statusUpdated.GetGeneration(), statusUpdated.Object)
	}

	// merge patch
	merged, err := res.Patch(ctx, "one", types.MergePatchType, []byte(`{"spec":{"color":"blue","unknown3":1}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, expected{watch.Modified, merged.GetResourceVersion()})
	warnings.expect(t, "merge patch", `unknown field "spec.unknown3"`)
	if nestedString(merged, "spec", "color") != "blue" || nestedInt(t, merged, "spec", "size") != 3 || hasField(merged, "spec", "unknown3") ||
		merged.GetGeneration() != 3 || nestedString(merged, "status", "phase") != "Ready" {
		t.Errorf("after the merge patch: generation %d, %v; want spec.color blue, size 3, no unknown3, generation 3, status kept", merged.GetGeneration(), merged.Object)
	}

	// JSON patch
	patched, err := res.Patch(ctx, "one", types.JSONPatchType,
		[]byte(`[{"op":"test","path":"/spec/color","value":"blue"},{"op":"replace","path":"/spec/size","value":5}]`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, expected{watch.Modified, patched.GetResourceVersion()})
	if nestedInt(t, patched, "spec", "size") != 5 || patched.GetGeneration() != 4 {
		t.Errorf("after the JSON patch: generation %d, spec %v; want size 5, generation 4", patched.GetGeneration(), patched.Object["spec"])
	}
	// A JSON patch whose test fails is refused as 422, changing nothing.
	_, err = res.Patch(ctx, "one", types.JSONPatchType,
		[]byte(`[{"op":"test","path":"/spec/color","value":"green"},{"op":"replace","path":"/spec/size","value":6}]`), metav1.PatchOptions{})
	if status, ok := err.(apierrors.APIStatus); !ok || status.Status().Code != 422 {
		t.Errorf("a JSON patch whose test op fails: %v, want a 422", err)
	}
	// A strategic merge patch is refused for custom resources: 415.
	_, err = res.Patch(ctx, "one", types.StrategicMergePatchType, []byte(`{"spec":{"size":7}}`), metav1.PatchOptions{})
	if !apierrors.IsUnsupportedMediaType(err) {
		t.Errorf("a strategic merge patch on a custom resource: %v, want 415 UnsupportedMediaType", err)
	} else if want := "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"; err.Error() != want {
		t.Errorf("a strategic merge patch on a custom resource: %q, want %q", err.Error(), want)
	}

	// a merge patch of the status subresource
	statusPatched, err := res.Patch(ctx, "one", types.MergePatchType, []byte(`{"status":{"phase":"Done"},"spec":{"size":9}}`), metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, expected{watch.Modified, statusPatched.GetResourceVersion()})
	if nestedString(statusPatched, "status", "phase") != "Done" || nestedInt(t, statusPatched, "spec", "size") != 5 || statusPatched.GetGeneration() != 4 {
		t.Errorf("after patching status: generation %d, %v; want status.phase Done, spec.size 5, generation 4", statusPatched.GetGeneration(), statusPatched.Object)
	}

	// delete
	if err := res.Delete(ctx, "one", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want = append(want, expected{watch.Deleted, ""})
	_, err = res.Get(ctx, "one", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: %v, want NotFound", err)
	} else if want := `gadgets.clientgo.kubext.dev "one" not found`; err.Error() != want {
		t.Errorf("get after delete: %q, want %q", err.Error(), want)
	}
	if err := res.Delete(ctx, "one", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("deleting again: %v, want NotFound", err)
	}

	// The watch saw each write of "one" in order, and "two" added.
	var sawTwo bool
	for i := 0; i < len(want); {
		var ev watch.Event
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("the watch closed after %d of %d events about one", i, len(want))
			}
			ev = e
		case <-time.After(10 * time.Second):
			t.Fatalf("the watch gave %d of %d events about one within 10 s; next wanted %v", i, len(want), want[i])
		}
		obj, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			t.Fatalf("watch event %s with a %T", ev.Type, ev.Object)
		}
		if obj.GetName() == "two" {
			sawTwo = sawTwo || ev.Type == watch.Added
			continue
		}
		if ev.Type != want[i].typ || (want[i].rv != "" && obj.GetResourceVersion() != want[i].rv) {
			t.Errorf("watch event %d about one: %s at resourceVersion %s, want %s at %q", i, ev.Type, obj.GetResourceVersion(), want[i].typ, want[i].rv)
		}
		if ev.Type == watch.Deleted && (nestedInt(t, obj, "spec", "size") != 5 || nestedString(obj, "status", "phase") != "Done") {
			t.Errorf("the DELETED event carries %v, want the last state (spec.size 5, status.phase Done)", obj.Object)
		}
		i++
	}
	if !sawTwo {
		t.Error("the watch did not report two's creation before one's deletion")
	}
}

// warningLog collects the warnings the server sends (Warning headers).
type warningLog struct {
	mu       sync.Mutex
	warnings []string
}

func (l *warningLog) HandleWarningHeader(code int, agent, text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.warnings = append(l.warnings, text)
}

func (l *warningLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.warnings
	l.warnings = nil
	return w
}

// expect checks the warnings received since the last take are want (in any
// order).
func (l *warningLog) expect(t *testing.T, step string, want ...string) {
	t.Helper()
	got := l.take()
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("%s: warnings %q, want %q", step, got, want)
	}
}
