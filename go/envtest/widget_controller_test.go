package envtest

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

const (
	widgetFinalizer     = "test.kubext.dev/finalizer"
	widgetControllerID  = "widget-controller"
	configMapNameSuffix = "-config"
)

// WidgetReconciler is what a kubebuilder project's controller does: a
// finalizer, an owned ConfigMap, the status, and Events.
type WidgetReconciler struct {
	client.Client
	Scheme   *runtime.Scheme
	Recorder recorder.EventRecorder
}

func (r *WidgetReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&Widget{}).
		Owns(&corev1.ConfigMap{}).
		Named("widget").
		Complete(r)
}

func (r *WidgetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx)

	var widget Widget
	if err := r.Get(ctx, req.NamespacedName, &widget); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	if !widget.DeletionTimestamp.IsZero() {
		if controllerutil.ContainsFinalizer(&widget, widgetFinalizer) {
			r.Recorder.Eventf(&widget, nil, corev1.EventTypeNormal, "Finalized", "Finalize",
				"removing finalizer %s", widgetFinalizer)
			controllerutil.RemoveFinalizer(&widget, widgetFinalizer)
			if err := r.Update(ctx, &widget); err != nil {
				return ctrl.Result{}, err
			}
			logger.Info("finalizer removed")
		}
		return ctrl.Result{}, nil
	}

	if controllerutil.AddFinalizer(&widget, widgetFinalizer) {
		if err := r.Update(ctx, &widget); err != nil {
			return ctrl.Result{}, err
		}
	}

	replicas := int32(0)
	if widget.Spec.Replicas != nil {
		replicas = *widget.Spec.Replicas
	}
	configMap := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name:      widget.Name + configMapNameSuffix,
		Namespace: widget.Namespace,
	}}
	op, err := controllerutil.CreateOrUpdate(ctx, r.Client, configMap, func() error {
		configMap.Data = map[string]string{
			"replicas": strconv.Itoa(int(replicas)),
			"message":  widget.Spec.Message,
		}
		return controllerutil.SetControllerReference(&widget, configMap, r.Scheme)
	})
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("configmap %s: %w", configMap.Name, err)
	}

	patch := client.MergeFrom(widget.DeepCopy())
	widget.Status.Ready = true
	widget.Status.ConfigMapName = configMap.Name
	widget.Status.ObservedGeneration = widget.Generation
	if err := r.Status().Patch(ctx, &widget, patch); err != nil {
		return ctrl.Result{}, err
	}

	if op != controllerutil.OperationResultNone {
		r.Recorder.Eventf(&widget, configMap, corev1.EventTypeNormal, "ConfigMapSynced", "Sync",
			"ConfigMap %s %s", configMap.Name, op)
	}
	return ctrl.Result{}, nil
}
