package clientgo

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	applyappsv1 "k8s.io/client-go/applyconfigurations/apps/v1"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	applymetav1 "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// managedEntry returns obj's managedFields entry of manager (and subresource),
// failing the test when there is none or more than one.
func managedEntry(t *testing.T, entries []metav1.ManagedFieldsEntry, manager, subresource string) metav1.ManagedFieldsEntry {
	t.Helper()
	var found []metav1.ManagedFieldsEntry
	for _, e := range entries {
		if e.Manager == manager && e.Subresource == subresource {
			found = append(found, e)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d managedFields entries of manager %q (subresource %q), want 1; managedFields: %s",
			len(found), manager, subresource, describeManagedFields(entries))
	}
	return found[0]
}

func hasManager(entries []metav1.ManagedFieldsEntry, manager string) bool {
	return slices.ContainsFunc(entries, func(e metav1.ManagedFieldsEntry) bool { return e.Manager == manager })
}

func describeManagedFields(entries []metav1.ManagedFieldsEntry) string {
	var parts []string
	for _, e := range entries {
		fields := ""
		if e.FieldsV1 != nil {
			fields = string(e.FieldsV1.Raw)
		}
		parts = append(parts, e.Manager+"/"+string(e.Operation)+"/"+e.APIVersion+"/"+e.Subresource+" "+fields)
	}
	return strings.Join(parts, "; ")
}

// ownedKeys returns the keys FieldsV1 lists under the path (e.g. "f:data"),
// without ".".
func ownedKeys(t *testing.T, e metav1.ManagedFieldsEntry, path ...string) []string {
	t.Helper()
	if e.FieldsType != "FieldsV1" || e.FieldsV1 == nil {
		t.Fatalf("manager %s: fieldsType %q, fieldsV1 %v; want FieldsV1", e.Manager, e.FieldsType, e.FieldsV1)
	}
	var node map[string]any
	if err := json.Unmarshal(e.FieldsV1.Raw, &node); err != nil {
		t.Fatalf("manager %s: fieldsV1 %s: %v", e.Manager, e.FieldsV1.Raw, err)
	}
	for _, p := range path {
		child, ok := node[p].(map[string]any)
		if !ok {
			return nil
		}
		node = child
	}
	var keys []string
	for k := range node {
		if k != "." {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func expectOwned(t *testing.T, entries []metav1.ManagedFieldsEntry, manager, subresource string, path []string, want ...string) {
	t.Helper()
	e := managedEntry(t, entries, manager, subresource)
	if got := ownedKeys(t, e, path...); !slices.Equal(got, want) {
		t.Errorf("manager %s owns %v under %v, want %v (fieldsV1 %s)", manager, got, path, want, e.FieldsV1.Raw)
	}
}

// expectApplyConflict checks err is kube-apiserver's apply conflict: 409,
// reason Conflict, message "Apply failed with 1 conflict: conflict with
// <manager>: <field>" and one FieldManagerConflict cause.
func expectApplyConflict(t *testing.T, err error, manager, field string) {
	t.Helper()
	if !apierrors.IsConflict(err) {
		t.Fatalf("apply: %v, want a 409 Conflict", err)
	}
	status, ok := err.(apierrors.APIStatus)
	if !ok {
		t.Fatalf("apply error %T is no APIStatus", err)
	}
	s := status.Status()
	if s.Code != 409 || s.Reason != metav1.StatusReasonConflict {
		t.Errorf("apply conflict: code %d reason %q, want 409 Conflict", s.Code, s.Reason)
	}
	if want := "Apply failed with 1 conflict: conflict with " + manager + ": " + field; s.Message != want {
		t.Errorf("apply conflict message %q, want %q", s.Message, want)
	}
	want := metav1.StatusCause{Type: metav1.CauseTypeFieldManagerConflict, Message: "conflict with " + manager, Field: field}
	if s.Details == nil || len(s.Details.Causes) != 1 || s.Details.Causes[0] != want {
		t.Errorf("apply conflict details %+v, want the one cause %+v", s.Details, want)
	}
}

func TestServerSideApply(t *testing.T) {
	srv, ctx := start(t)
	cs := srv.Clientset(t)
	const ns = "ssa"
	createNamespace(t, ctx, cs, ns)
	t.Run("ConfigMap", func(t *testing.T) { applyConfigMap(t, ctx, cs, ns) })
	jsonClient, err := kubernetes.NewForConfig(jsonConfig(srv.Config))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("Deployment", func(t *testing.T) { applyDeployment(t, ctx, cs, jsonClient, ns) })
}

func applyConfigMap(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns string) {
	cms := cs.CoreV1().ConfigMaps(ns)
	a := metav1.ApplyOptions{FieldManager: "mgr-a"}

	// The first apply creates.
	cm, err := cms.Apply(ctx, applycorev1.ConfigMap("ssa", ns).
		WithLabels(map[string]string{"owner": "a"}).
		WithData(map[string]string{"a": "1", "b": "2", "c": "3"}), a)
	if err != nil {
		t.Fatal(err)
	}
	if cm.UID == "" || cm.Labels["owner"] != "a" || !maps.Equal(cm.Data, map[string]string{"a": "1", "b": "2", "c": "3"}) {
		t.Fatalf("first apply answered %+v", cm)
	}
	if len(cm.ManagedFields) != 1 {
		t.Fatalf("managedFields after the first apply: %s; want one entry", describeManagedFields(cm.ManagedFields))
	}
	e := cm.ManagedFields[0]
	if e.Manager != "mgr-a" || e.Operation != metav1.ManagedFieldsOperationApply || e.APIVersion != "v1" ||
		e.Subresource != "" || e.Time == nil || e.FieldsType != "FieldsV1" {
		t.Errorf("managedFields entry %+v, want manager mgr-a, operation Apply, apiVersion v1, a time, FieldsV1", e)
	}
	expectOwned(t, cm.ManagedFields, "mgr-a", "", []string{"f:data"}, "f:a", "f:b", "f:c")
	expectOwned(t, cm.ManagedFields, "mgr-a", "", []string{"f:metadata", "f:labels"}, "f:owner")

	// The same apply again changes nothing, not even the resourceVersion.
	again, err := cms.Apply(ctx, applycorev1.ConfigMap("ssa", ns).
		WithLabels(map[string]string{"owner": "a"}).
		WithData(map[string]string{"a": "1", "b": "2", "c": "3"}), a)
	if err != nil {
		t.Fatal(err)
	}
	if again.ResourceVersion != cm.ResourceVersion {
		t.Errorf("a no-op apply moved resourceVersion from %s to %s", cm.ResourceVersion, again.ResourceVersion)
	}

	// A second manager setting data.a differently conflicts...
	b := applycorev1.ConfigMap("ssa", ns).WithData(map[string]string{"a": "changed"})
	_, err = cms.Apply(ctx, b, metav1.ApplyOptions{FieldManager: "mgr-b"})
	expectApplyConflict(t, err, `"mgr-a"`, ".data.a")
	if cur, err := cms.Get(ctx, "ssa", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	} else if cur.Data["a"] != "1" || cur.ResourceVersion != cm.ResourceVersion || hasManager(cur.ManagedFields, "mgr-b") {
		t.Errorf("the conflicting apply changed the ConfigMap: data %v, resourceVersion %s (was %s), managedFields %s",
			cur.Data, cur.ResourceVersion, cm.ResourceVersion, describeManagedFields(cur.ManagedFields))
	}

	// ...and takes the field over with force.
	cm, err = cms.Apply(ctx, b, metav1.ApplyOptions{FieldManager: "mgr-b", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(cm.Data, map[string]string{"a": "changed", "b": "2", "c": "3"}) {
		t.Errorf("data after the forced apply: %v", cm.Data)
	}
	expectOwned(t, cm.ManagedFields, "mgr-b", "", []string{"f:data"}, "f:a")
	expectOwned(t, cm.ManagedFields, "mgr-a", "", []string{"f:data"}, "f:b", "f:c")
	if op := managedEntry(t, cm.ManagedFields, "mgr-b", "").Operation; op != metav1.ManagedFieldsOperationApply {
		t.Errorf("mgr-b's operation is %q, want Apply", op)
	}

	// An update by another manager takes data.b over from mgr-a.
	cm.Data["b"] = "edited"
	cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "editor"})
	if err != nil {
		t.Fatal(err)
	}
	editor := managedEntry(t, cm.ManagedFields, "editor", "")
	if editor.Operation != metav1.ManagedFieldsOperationUpdate || editor.APIVersion != "v1" {
		t.Errorf("editor's entry %+v, want operation Update, apiVersion v1", editor)
	}
	expectOwned(t, cm.ManagedFields, "editor", "", []string{"f:data"}, "f:b")
	expectOwned(t, cm.ManagedFields, "mgr-a", "", []string{"f:data"}, "f:c")

	// mgr-a applies fewer fields (no c) and b back: a conflict with the
	// updater first, then with force b is mgr-a's again and c is gone.
	fewer := applycorev1.ConfigMap("ssa", ns).
		WithLabels(map[string]string{"owner": "a"}).
		WithData(map[string]string{"b": "2"})
	_, err = cms.Apply(ctx, fewer, a)
	expectApplyConflict(t, err, `"editor" using v1`, ".data.b")
	cm, err = cms.Apply(ctx, fewer, metav1.ApplyOptions{FieldManager: "mgr-a", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(cm.Data, map[string]string{"a": "changed", "b": "2"}) {
		t.Errorf("data after mgr-a applied {b} (dropping c): %v, want a=changed (mgr-b's) and b=2", cm.Data)
	}
	expectOwned(t, cm.ManagedFields, "mgr-a", "", []string{"f:data"}, "f:b")
	if hasManager(cm.ManagedFields, "editor") {
		t.Errorf("editor, left owning nothing, still has a managedFields entry: %s", describeManagedFields(cm.ManagedFields))
	}

	// Extract gives back exactly what each manager owns...
	extracted, err := applycorev1.ExtractConfigMap(cm, "mgr-a")
	if err != nil {
		t.Fatal(err)
	}
	if extracted.Name == nil || *extracted.Name != "ssa" || extracted.Namespace == nil || *extracted.Namespace != ns ||
		extracted.Kind == nil || *extracted.Kind != "ConfigMap" || extracted.APIVersion == nil || *extracted.APIVersion != "v1" {
		t.Errorf("ExtractConfigMap(mgr-a) identifies %v/%v %v/%v", extracted.APIVersion, extracted.Kind, extracted.Namespace, extracted.Name)
	}
	if !maps.Equal(extracted.Data, map[string]string{"b": "2"}) || !maps.Equal(extracted.Labels, map[string]string{"owner": "a"}) {
		t.Errorf("ExtractConfigMap(mgr-a): data %v labels %v, want data {b: 2} labels {owner: a}", extracted.Data, extracted.Labels)
	}
	extractedB, err := applycorev1.ExtractConfigMap(cm, "mgr-b")
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(extractedB.Data, map[string]string{"a": "changed"}) || len(extractedB.Labels) != 0 {
		t.Errorf("ExtractConfigMap(mgr-b): data %v labels %v, want data {a: changed} and no labels", extractedB.Data, extractedB.Labels)
	}

	// ...which applied back is a no-op, and applied with a change adds it.
	same, err := cms.Apply(ctx, extracted, a)
	if err != nil {
		t.Fatal(err)
	}
	if same.ResourceVersion != cm.ResourceVersion {
		t.Errorf("re-applying the extracted configuration moved resourceVersion from %s to %s", cm.ResourceVersion, same.ResourceVersion)
	}
	cm, err = cms.Apply(ctx, extracted.WithData(map[string]string{"d": "4"}), a)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(cm.Data, map[string]string{"a": "changed", "b": "2", "d": "4"}) {
		t.Errorf("data after applying the extracted configuration plus d: %v", cm.Data)
	}
	expectOwned(t, cm.ManagedFields, "mgr-a", "", []string{"f:data"}, "f:b", "f:d")

	// Applying without a field manager is refused.
	_, err = cms.Apply(ctx, applycorev1.ConfigMap("ssa", ns), metav1.ApplyOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("an apply without fieldManager: %v, want 422 Invalid", err)
	} else if want := `PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch`; err.Error() != want {
		t.Errorf("an apply without fieldManager: %q, want %q", err.Error(), want)
	}
}

func applyDeployment(t *testing.T, ctx context.Context, cs, jsonClient kubernetes.Interface, ns string) {
	deployments := cs.AppsV1().Deployments(ns)
	jsonDeployments := jsonClient.AppsV1().Deployments(ns)
	web := func(image string, replicas int32) *applyappsv1.DeploymentApplyConfiguration {
		return applyappsv1.Deployment("web", ns).
			WithLabels(map[string]string{"app": "web"}).
			WithSpec(applyappsv1.DeploymentSpec().
				WithReplicas(replicas).
				WithSelector(applymetav1.LabelSelector().WithMatchLabels(map[string]string{"app": "web"})).
				WithTemplate(applycorev1.PodTemplateSpec().
					WithLabels(map[string]string{"app": "web"}).
					WithSpec(applycorev1.PodSpec().WithContainers(
						applycorev1.Container().WithName("web").WithImage(image).
							WithPorts(applycorev1.ContainerPort().WithContainerPort(80))))))
	}
	opts := metav1.ApplyOptions{FieldManager: "deployer"}

	d, err := deployments.Apply(ctx, web("nginx:1.27", 2), opts)
	if err != nil {
		t.Fatal(err)
	}
	if d.Generation != 1 || d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("created Deployment: generation %d replicas %v, want 1 and 2", d.Generation, d.Spec.Replicas)
	}
	// kube-apiserver's defaulting (pkg/apis/apps/v1/defaults.go).
	quarter := intstr.FromString("25%")
	if d.Spec.Strategy.Type != "RollingUpdate" || d.Spec.Strategy.RollingUpdate == nil ||
		d.Spec.Strategy.RollingUpdate.MaxSurge == nil || *d.Spec.Strategy.RollingUpdate.MaxSurge != quarter ||
		d.Spec.Strategy.RollingUpdate.MaxUnavailable == nil || *d.Spec.Strategy.RollingUpdate.MaxUnavailable != quarter ||
		d.Spec.RevisionHistoryLimit == nil || *d.Spec.RevisionHistoryLimit != 10 ||
		d.Spec.ProgressDeadlineSeconds == nil || *d.Spec.ProgressDeadlineSeconds != 600 {
		t.Errorf("Deployment spec not defaulted as kube-apiserver does: strategy %+v revisionHistoryLimit %v progressDeadlineSeconds %v",
			d.Spec.Strategy, d.Spec.RevisionHistoryLimit, d.Spec.ProgressDeadlineSeconds)
	}
	entry := managedEntry(t, d.ManagedFields, "deployer", "")
	if entry.Operation != metav1.ManagedFieldsOperationApply || entry.APIVersion != "apps/v1" {
		t.Errorf("deployer's entry: operation %q apiVersion %q, want Apply apps/v1", entry.Operation, entry.APIVersion)
	}
	// The defaulted fields belong to no one.
	if got := ownedKeys(t, entry, "f:spec"); !slices.Equal(got, []string{"f:replicas", "f:selector", "f:template"}) {
		t.Errorf("deployer owns %v under spec, want f:replicas f:selector f:template", got)
	}

	// A new image: spec changes, generation moves.
	d, err = deployments.Apply(ctx, web("nginx:1.28", 2), opts)
	if err != nil {
		t.Fatal(err)
	}
	if d.Generation != 2 || d.Spec.Template.Spec.Containers[0].Image != "nginx:1.28" {
		t.Errorf("after applying a new image: generation %d image %q, want 2 and nginx:1.28", d.Generation, d.Spec.Template.Spec.Containers[0].Image)
	}

	// Scaling through the scale subresource (kubectl scale) takes
	// spec.replicas over; the applier then conflicts on it.
	scale, err := deployments.GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if scale.Spec.Replicas != 2 || scale.Status.Selector != "app=web" {
		t.Errorf("scale: spec.replicas %d status.selector %q, want 2 and app=web", scale.Spec.Replicas, scale.Status.Selector)
	}
	scale.Spec.Replicas = 5
	// Sent as JSON: client-go's default, protobuf, for the scale
	// subresource is TestProtobufBuiltins' concern.
	if _, err := jsonDeployments.UpdateScale(ctx, "web", scale, metav1.UpdateOptions{FieldManager: "scaler"}); err != nil {
		t.Fatal(err)
	}
	d, err = deployments.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 5 {
		t.Errorf("replicas after scaling: %d, want 5", *d.Spec.Replicas)
	}
	scaler := managedEntry(t, d.ManagedFields, "scaler", "scale")
	if scaler.Operation != metav1.ManagedFieldsOperationUpdate || scaler.APIVersion != "apps/v1" {
		t.Errorf("scaler's entry: operation %q apiVersion %q, want Update apps/v1", scaler.Operation, scaler.APIVersion)
	}
	expectOwned(t, d.ManagedFields, "scaler", "scale", []string{"f:spec"}, "f:replicas")
	if got := ownedKeys(t, managedEntry(t, d.ManagedFields, "deployer", ""), "f:spec"); slices.Contains(got, "f:replicas") {
		t.Errorf("deployer still owns spec.replicas after the scale: %v", got)
	}
	_, err = deployments.Apply(ctx, web("nginx:1.28", 2), opts)
	expectApplyConflict(t, err, `"scaler" with subresource "scale" using apps/v1`, ".spec.replicas")
}
