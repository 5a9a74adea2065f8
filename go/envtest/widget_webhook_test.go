package envtest

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

const (
	maxReplicas       = 10
	warnReplicas      = 5
	frozenLabel       = "test.kubext.dev/frozen"
	protectedLabel    = "test.kubext.dev/protected"
	defaultedByMarker = "test.kubext.dev/defaulted-by"
)

// widgetDefaulter is the defaulting webhook (served at
// /mutate-test-kubext-dev-v1-widget, the path controller-runtime derives and
// testdata/webhooks names).
type widgetDefaulter struct{}

func (widgetDefaulter) Default(_ context.Context, widget *Widget) error {
	if widget.Spec.Replicas == nil {
		one := int32(1)
		widget.Spec.Replicas = &one
	}
	if widget.Annotations == nil {
		widget.Annotations = map[string]string{}
	}
	widget.Annotations[defaultedByMarker] = "widget-defaulter"
	return nil
}

// widgetValidator is the validating webhook
// (/validate-test-kubext-dev-v1-widget).
type widgetValidator struct{}

func (widgetValidator) validate(widget *Widget) (admission.Warnings, error) {
	if widget.Spec.Replicas == nil {
		return nil, nil
	}
	replicas := *widget.Spec.Replicas
	if replicas < 0 || replicas > maxReplicas {
		return nil, apierrors.NewInvalid(
			schema.GroupKind{Group: widgetGroupVersion.Group, Kind: "Widget"},
			widget.Name,
			field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), replicas,
				fmt.Sprintf("must be between 0 and %d", maxReplicas))},
		)
	}
	if replicas > warnReplicas {
		return admission.Warnings{fmt.Sprintf("spec.replicas %d is more than %d", replicas, warnReplicas)}, nil
	}
	return nil, nil
}

func (v widgetValidator) ValidateCreate(_ context.Context, widget *Widget) (admission.Warnings, error) {
	return v.validate(widget)
}

func (v widgetValidator) ValidateUpdate(_ context.Context, oldWidget, widget *Widget) (admission.Warnings, error) {
	if oldWidget.Labels[frozenLabel] == "true" && widget.Labels[frozenLabel] == "true" &&
		oldWidget.Spec.Message != widget.Spec.Message {
		return nil, errors.New("widget is frozen: spec.message cannot change")
	}
	return v.validate(widget)
}

func (widgetValidator) ValidateDelete(_ context.Context, widget *Widget) (admission.Warnings, error) {
	if widget.Labels[protectedLabel] == "true" {
		return nil, fmt.Errorf("widget %s is protected", widget.Name)
	}
	return nil, nil
}

func setupWidgetWebhooks(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &Widget{}).
		WithDefaulter(widgetDefaulter{}).
		WithValidator(widgetValidator{}).
		Complete()
}
