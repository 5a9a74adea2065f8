package envtest

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

var _ = Describe("a user added with testEnv.AddUser", func() {
	It("is Forbidden until a Role and RoleBinding grant it list on configmaps", func() {
		ns := newNamespace("rbac")
		other := newNamespace("rbac-other")

		user, err := testEnv.AddUser(envtest.User{Name: "plain-user"}, nil)
		Expect(err).NotTo(HaveOccurred())
		userClient, err := client.New(user.Config(), client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())

		By("a list it may not do")
		err = userClient.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns))
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring(`User "plain-user" cannot`))
		Expect(err.Error()).To(Equal(`configmaps is forbidden: User "plain-user" cannot list resource "configmaps" in API group "" in the namespace "` + ns + `"`))

		By("a create it may not do, of a custom resource")
		err = userClient.Create(ctx, &Widget{ObjectMeta: metav1.ObjectMeta{Name: "nope", Namespace: ns}})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(Equal(`widgets.test.kubext.dev is forbidden: User "plain-user" cannot create resource "widgets" in API group "test.kubext.dev" in the namespace "` + ns + `"`))

		By("a cluster-scoped list it may not do")
		err = userClient.List(ctx, &corev1.NamespaceList{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(Equal(`namespaces is forbidden: User "plain-user" cannot list resource "namespaces" in API group "" at the cluster scope`))

		By("its own SelfSubjectAccessReview (system:basic-user) agrees")
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "list", Resource: "configmaps"},
		}}
		Expect(userClient.Create(ctx, review)).To(Succeed())
		Expect(review.Status.Allowed).To(BeFalse())

		By("a Role and RoleBinding granting list on configmaps in one namespace")
		Expect(k8sClient.Create(ctx, &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "configmap-lister", Namespace: ns},
			Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list"},
			}},
		})).To(Succeed())
		Expect(k8sClient.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "plain-user-lists", Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "configmap-lister"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "plain-user"}},
		})).To(Succeed())
		Expect(k8sClient.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "listed", Namespace: ns},
		})).To(Succeed())

		Eventually(func(g Gomega) {
			var list corev1.ConfigMapList
			g.Expect(userClient.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			var names []string
			for _, cm := range list.Items {
				names = append(names, cm.Name)
			}
			// kube-root-ca.crt is there too where its publisher runs.
			g.Expect(names).To(ContainElement("listed"))
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

		review = &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "list", Resource: "configmaps"},
		}}
		Expect(userClient.Create(ctx, review)).To(Succeed())
		Expect(review.Status.Allowed).To(BeTrue())

		By("what the Role does not grant is still Forbidden")
		err = userClient.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(other))
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring(`User "plain-user" cannot list resource "configmaps" in API group "" in the namespace "` + other + `"`))
		err = userClient.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "made", Namespace: ns}})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring(`User "plain-user" cannot create resource "configmaps" in API group "" in the namespace "` + ns + `"`))
		err = userClient.Get(ctx, key(ns, "listed"), &corev1.ConfigMap{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring(`User "plain-user" cannot get resource "configmaps" in API group "" in the namespace "` + ns + `"`))
	})
})
