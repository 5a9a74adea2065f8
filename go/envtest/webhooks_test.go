package envtest

import (
	"fmt"
	"net"
	"strconv"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// warningLog keeps the warnings a client was sent.
type warningLog struct {
	mu       sync.Mutex
	warnings []string
}

func (w *warningLog) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, text)
}

func (w *warningLog) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.warnings...)
}

const validatingWebhook = "vwidget.test.kubext.dev"

func deniedBy(webhook string) string {
	return fmt.Sprintf("admission webhook %q denied the request: ", webhook)
}

var _ = Describe("webhooks installed by envtest and served by the manager's webhook server", func() {
	It("are registered with envtest's local URL and CA", func() {
		wio := &testEnv.WebhookInstallOptions
		base := "https://" + net.JoinHostPort(wio.LocalServingHost, strconv.Itoa(wio.LocalServingPort)) + "/"
		var mutating admissionregistrationv1.MutatingWebhookConfiguration
		Expect(k8sClient.Get(ctx, key("", "mutating-webhook-configuration"), &mutating)).To(Succeed())
		Expect(mutating.Webhooks).To(HaveLen(1))
		Expect(mutating.Webhooks[0].ClientConfig.Service).To(BeNil())
		Expect(mutating.Webhooks[0].ClientConfig.URL).To(HaveValue(Equal(base + "/mutate-test-kubext-dev-v1-widget")))
		Expect(mutating.Webhooks[0].ClientConfig.CABundle).To(Equal(wio.LocalServingCAData))
		// Defaulted by the API as kube-apiserver does.
		Expect(mutating.Webhooks[0].MatchPolicy).To(HaveValue(Equal(admissionregistrationv1.Equivalent)))
		Expect(mutating.Webhooks[0].ReinvocationPolicy).To(HaveValue(Equal(admissionregistrationv1.NeverReinvocationPolicy)))
		Expect(mutating.Webhooks[0].TimeoutSeconds).To(HaveValue(BeEquivalentTo(10)))

		var validating admissionregistrationv1.ValidatingWebhookConfiguration
		Expect(k8sClient.Get(ctx, key("", "validating-webhook-configuration"), &validating)).To(Succeed())
		Expect(validating.Webhooks).To(HaveLen(1))
		Expect(validating.Webhooks[0].ClientConfig.Service).To(BeNil())
		Expect(validating.Webhooks[0].ClientConfig.URL).To(HaveValue(Equal(base + "/validate-test-kubext-dev-v1-widget")))
		Expect(validating.Webhooks[0].ClientConfig.CABundle).To(Equal(wio.LocalServingCAData))
	})

	It("default spec.replicas to 1 on create", func() {
		ns := newNamespace("webhook-default")
		widget := &Widget{ObjectMeta: metav1.ObjectMeta{Name: "defaulted", Namespace: ns}}
		Expect(k8sClient.Create(ctx, widget)).To(Succeed())
		// The object the create answered is the defaulted one.
		Expect(widget.Spec.Replicas).To(HaveValue(BeEquivalentTo(1)))
		Expect(widget.Annotations).To(HaveKeyWithValue(defaultedByMarker, "widget-defaulter"))

		stored := &Widget{}
		Expect(k8sClient.Get(ctx, key(ns, "defaulted"), stored)).To(Succeed())
		Expect(stored.Spec.Replicas).To(HaveValue(BeEquivalentTo(1)))

		By("a value given is kept")
		widget = &Widget{ObjectMeta: metav1.ObjectMeta{Name: "given", Namespace: ns}}
		widget.Spec.Replicas = int32Ptr(0)
		Expect(k8sClient.Create(ctx, widget)).To(Succeed())
		Expect(widget.Spec.Replicas).To(HaveValue(BeEquivalentTo(0)))
	})

	It("refuse a bad value with the validator's message, and pass on its warnings", func() {
		ns := newNamespace("webhook-validate")
		warnings := &warningLog{}
		warnedConfig := rest.CopyConfig(cfg)
		warnedConfig.WarningHandler = warnings
		warned, err := client.New(warnedConfig, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())

		By("an invalid spec.replicas on create: the validator's Invalid status")
		bad := &Widget{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: ns}}
		bad.Spec.Replicas = int32Ptr(99)
		err = warned.Create(ctx, bad)
		Expect(err).To(HaveOccurred())
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		invalid := apierrors.NewInvalid(schema.GroupKind{Group: "test.kubext.dev", Kind: "Widget"}, "bad",
			field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), int32(99), "must be between 0 and 10")})
		Expect(err.Error()).To(Equal(deniedBy(validatingWebhook) + invalid.Error()))
		status := err.(apierrors.APIStatus).Status()
		Expect(status.Code).To(BeEquivalentTo(422))
		Expect(status.Details).NotTo(BeNil())
		Expect(status.Details.Name).To(Equal("bad"))
		Expect(status.Details.Kind).To(Equal("Widget"))
		Expect(status.Details.Causes).To(HaveLen(1))
		Expect(status.Details.Causes[0].Field).To(Equal("spec.replicas"))
		Expect(apierrors.IsNotFound(k8sClient.Get(ctx, key(ns, "bad"), &Widget{}))).To(BeTrue())

		By("an allowed value with a warning: the warning reaches the client")
		many := &Widget{ObjectMeta: metav1.ObjectMeta{Name: "many", Namespace: ns}}
		many.Spec.Replicas = int32Ptr(7)
		Expect(warned.Create(ctx, many)).To(Succeed())
		Expect(warnings.all()).To(ContainElement("spec.replicas 7 is more than 5"))

		By("an invalid spec.replicas on update")
		Eventually(func() error {
			if err := k8sClient.Get(ctx, key(ns, "many"), many); err != nil {
				return err
			}
			many.Spec.Replicas = int32Ptr(-1)
			err := k8sClient.Update(ctx, many)
			if apierrors.IsConflict(err) {
				return err
			}
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
			Expect(err.Error()).To(HavePrefix(deniedBy(validatingWebhook) + `Widget.test.kubext.dev "many" is invalid: spec.replicas: Invalid value: -1`))
			return nil
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

		By("a plain error from the validator: Forbidden with its message")
		frozen := &Widget{ObjectMeta: metav1.ObjectMeta{Name: "frozen", Namespace: ns,
			Labels: map[string]string{frozenLabel: "true"}}}
		frozen.Spec.Message = "before"
		Expect(k8sClient.Create(ctx, frozen)).To(Succeed())
		Eventually(func() error {
			if err := k8sClient.Get(ctx, key(ns, "frozen"), frozen); err != nil {
				return err
			}
			frozen.Spec.Message = "after"
			err := k8sClient.Update(ctx, frozen)
			if apierrors.IsConflict(err) {
				return err
			}
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
			Expect(err.Error()).To(Equal(deniedBy(validatingWebhook) + "widget is frozen: spec.message cannot change"))
			return nil
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

		By("a DELETE refused by the validator, given the object being deleted")
		protected := &Widget{ObjectMeta: metav1.ObjectMeta{Name: "protected", Namespace: ns,
			Labels: map[string]string{protectedLabel: "true"}}}
		Expect(k8sClient.Create(ctx, protected)).To(Succeed())
		err = k8sClient.Delete(ctx, protected)
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(Equal(deniedBy(validatingWebhook) + "widget protected is protected"))
		Expect(k8sClient.Get(ctx, key(ns, "protected"), protected)).To(Succeed())
		Expect(protected.DeletionTimestamp).To(BeNil())
		Eventually(func() error {
			if err := k8sClient.Get(ctx, key(ns, "protected"), protected); err != nil {
				return err
			}
			delete(protected.Labels, protectedLabel)
			return k8sClient.Update(ctx, protected)
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
		Expect(k8sClient.Delete(ctx, protected)).To(Succeed())
	})
})
