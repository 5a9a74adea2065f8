package envtest

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The Go types of testdata/crds/test.kubext.dev_widgets.yaml, written as
// kubebuilder's api/v1 package would have them (deep copies by hand instead
// of controller-gen's).

var widgetGroupVersion = schema.GroupVersion{Group: "test.kubext.dev", Version: "v1"}

// WidgetSpec is the desired state of a Widget.
type WidgetSpec struct {
	// Replicas is defaulted to 1 by the mutating webhook and must be within
	// 0..10 (the validating webhook).
	Replicas *int32 `json:"replicas,omitempty"`
	Message  string `json:"message,omitempty"`
}

// WidgetStatus is what the reconciler reports.
type WidgetStatus struct {
	Ready              bool   `json:"ready,omitempty"`
	ConfigMapName      string `json:"configMapName,omitempty"`
	ObservedGeneration int64  `json:"observedGeneration,omitempty"`
}

// Widget is a namespaced test resource.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WidgetSpec   `json:"spec,omitempty"`
	Status WidgetStatus `json:"status,omitempty"`
}

// WidgetList is a list of Widgets.
type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

func (in *Widget) DeepCopyInto(out *Widget) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	if in.Spec.Replicas != nil {
		replicas := *in.Spec.Replicas
		out.Spec.Replicas = &replicas
	}
	out.Status = in.Status
}

func (in *Widget) DeepCopy() *Widget {
	if in == nil {
		return nil
	}
	out := new(Widget)
	in.DeepCopyInto(out)
	return out
}

func (in *Widget) DeepCopyObject() runtime.Object {
	return in.DeepCopy()
}

func (in *WidgetList) DeepCopyObject() runtime.Object {
	if in == nil {
		return nil
	}
	out := new(WidgetList)
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]Widget, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}

func addWidgetTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(widgetGroupVersion, &Widget{}, &WidgetList{})
	metav1.AddToGroupVersion(scheme, widgetGroupVersion)
	return nil
}
