package envtest

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// holdFinalizer is the test's own finalizer: it keeps a deleted Widget in
// place so that what happens before it goes can be seen.
const holdFinalizer = "test.kubext.dev/held-by-test"

var _ = Describe("the Widget controller run by a controller-runtime manager", func() {
	It("adds its finalizer, owns a ConfigMap, patches the status, records Events and cleans up on deletion", func() {
		ns := newNamespace("reconcile")
		widget := &Widget{ObjectMeta: metav1.ObjectMeta{Name: "w1", Namespace: ns}}
		widget.Spec.Replicas = int32Ptr(3)
		widget.Spec.Message = "hello"
		Expect(k8sClient.Create(ctx, widget)).To(Succeed())
		uid := widget.UID
		Expect(uid).NotTo(BeEmpty())

		By("the finalizer and the status")
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, key(ns, "w1"), widget)).To(Succeed())
			g.Expect(widget.Finalizers).To(ContainElement(widgetFinalizer))
			g.Expect(widget.Status.Ready).To(BeTrue())
			g.Expect(widget.Status.ConfigMapName).To(Equal("w1" + configMapNameSuffix))
			g.Expect(widget.Status.ObservedGeneration).To(Equal(widget.Generation))
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
		// The status subresource: the reconciler's status patch left the
		// generation alone (only the spec moves it), the finalizer too.
		Expect(widget.Generation).To(BeEquivalentTo(1))

		By("the owned ConfigMap, with the Widget as its controller")
		configMap := &corev1.ConfigMap{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, key(ns, "w1"+configMapNameSuffix), configMap)).To(Succeed())
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
		Expect(configMap.Data).To(Equal(map[string]string{"replicas": "3", "message": "hello"}))
		Expect(configMap.OwnerReferences).To(Equal([]metav1.OwnerReference{{
			APIVersion:         "test.kubext.dev/v1",
			Kind:               "Widget",
			Name:               "w1",
			UID:                uid,
			Controller:         new(true),
			BlockOwnerDeletion: new(true),
		}}))

		By("the Event the manager's recorder wrote (events.k8s.io/v1), also seen as a core/v1 Event")
		var synced eventsv1.Event
		Eventually(func(g Gomega) {
			var events eventsv1.EventList
			g.Expect(k8sClient.List(ctx, &events, client.InNamespace(ns),
				client.MatchingFields{"regarding.name": "w1"})).To(Succeed())
			found := false
			for _, e := range events.Items {
				if e.Reason == "ConfigMapSynced" {
					synced, found = e, true
				}
			}
			g.Expect(found).To(BeTrue(), "events: %v", events.Items)
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
		Expect(synced.Type).To(Equal(corev1.EventTypeNormal))
		Expect(synced.Action).To(Equal("Sync"))
		Expect(synced.Note).To(Equal("ConfigMap w1-config created"))
		Expect(synced.ReportingController).To(Equal(widgetControllerID))
		Expect(synced.ReportingInstance).To(HavePrefix(widgetControllerID + "-"))
		Expect(synced.Regarding.Kind).To(Equal("Widget"))
		Expect(synced.Regarding.APIVersion).To(Equal("test.kubext.dev/v1"))
		Expect(synced.Regarding.UID).To(Equal(uid))
		Expect(synced.Related).NotTo(BeNil())
		Expect(synced.Related.Kind).To(Equal("ConfigMap"))
		Expect(synced.Related.Name).To(Equal("w1-config"))
		Expect(synced.EventTime.IsZero()).To(BeFalse())

		var coreEvents corev1.EventList
		Expect(k8sClient.List(ctx, &coreEvents, client.InNamespace(ns),
			client.MatchingFields{"involvedObject.name": "w1", "reason": "ConfigMapSynced"})).To(Succeed())
		Expect(coreEvents.Items).To(HaveLen(1))
		core := coreEvents.Items[0]
		Expect(core.Name).To(Equal(synced.Name))
		Expect(core.InvolvedObject.UID).To(Equal(uid))
		Expect(core.Message).To(Equal(synced.Note))
		Expect(core.ReportingController).To(Equal(widgetControllerID))
		Expect(core.Action).To(Equal("Sync"))

		By("a spec change reaching the ConfigMap and status.observedGeneration")
		Eventually(func() error {
			if err := k8sClient.Get(ctx, key(ns, "w1"), widget); err != nil {
				return err
			}
			widget.Spec.Replicas = int32Ptr(4)
			return k8sClient.Update(ctx, widget)
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
		Expect(widget.Generation).To(BeEquivalentTo(2))
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, key(ns, "w1"+configMapNameSuffix), configMap)).To(Succeed())
			g.Expect(configMap.Data).To(HaveKeyWithValue("replicas", "4"))
			g.Expect(k8sClient.Get(ctx, key(ns, "w1"), widget)).To(Succeed())
			g.Expect(widget.Status.ObservedGeneration).To(BeEquivalentTo(2))
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

		By("deleting: the controller's finalizer goes first while the test's own holds the Widget")
		Eventually(func() error {
			if err := k8sClient.Get(ctx, key(ns, "w1"), widget); err != nil {
				return err
			}
			controllerutil.AddFinalizer(widget, holdFinalizer)
			return k8sClient.Update(ctx, widget)
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
		Expect(k8sClient.Delete(ctx, widget)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, key(ns, "w1"), widget)).To(Succeed())
			g.Expect(widget.DeletionTimestamp).NotTo(BeNil())
			g.Expect(widget.Finalizers).To(Equal([]string{holdFinalizer}))
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
		Eventually(func(g Gomega) {
			var events eventsv1.EventList
			g.Expect(k8sClient.List(ctx, &events, client.InNamespace(ns),
				client.MatchingFields{"regarding.name": "w1", "reason": "Finalized"})).To(Succeed())
			g.Expect(events.Items).To(HaveLen(1))
			g.Expect(events.Items[0].Note).To(Equal("removing finalizer " + widgetFinalizer))
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
		// The owner is still there (being deleted, in the background): its
		// dependent stays.
		Consistently(func() error {
			return k8sClient.Get(ctx, key(ns, "w1"+configMapNameSuffix), &corev1.ConfigMap{})
		}).WithTimeout(2 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

		By("the last finalizer removed: the Widget goes, and the garbage collector takes its ConfigMap")
		Eventually(func() error {
			if err := k8sClient.Get(ctx, key(ns, "w1"), widget); err != nil {
				return err
			}
			controllerutil.RemoveFinalizer(widget, holdFinalizer)
			return k8sClient.Update(ctx, widget)
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, key(ns, "w1"), &Widget{}))
		}).WithTimeout(timeout).WithPolling(interval).Should(BeTrue())
		if againstUpstream() {
			AddReportEntry("skipped: kube-apiserver alone runs no garbage collector; the ConfigMap stays")
			return
		}
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, key(ns, "w1"+configMapNameSuffix), &corev1.ConfigMap{}))
		}).WithTimeout(gcTimeout).WithPolling(250*time.Millisecond).Should(BeTrue(),
			"kubext's garbage collector did not delete the ConfigMap owned by the deleted Widget")
	})
})
