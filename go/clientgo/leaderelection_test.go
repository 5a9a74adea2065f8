package clientgo

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

const (
	leaseName     = "clientgo-leader"
	leaseDuration = 2 * time.Second
)

// candidate is one participant in the election, running
// leaderelection.LeaderElector.Run until cancel.
type candidate struct {
	id      string
	elector *leaderelection.LeaderElector
	cancel  context.CancelFunc
	started chan struct{} // closed by OnStartedLeading
	done    chan struct{} // closed when Run returned

	mu         sync.Mutex
	stopped    bool     // OnStoppedLeading ran
	newLeaders []string // OnNewLeader's identities
}

// runCandidate runs a candidate with its own client, as a separate process
// would have (a shared client's rate limiter would slow both down).
func runCandidate(t *testing.T, ctx context.Context, cfg *rest.Config, ns, id string) *candidate {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := &candidate{id: id, started: make(chan struct{}), done: make(chan struct{})}
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Name: leaseName, Namespace: ns},
			Client:     cs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: id},
		},
		LeaseDuration:   leaseDuration,
		RenewDeadline:   time.Second,
		RetryPeriod:     200 * time.Millisecond,
		ReleaseOnCancel: true,
		Name:            "clientgo-test",
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { close(c.started) },
			OnStoppedLeading: func() {
				c.mu.Lock()
				defer c.mu.Unlock()
				c.stopped = true
			},
			OnNewLeader: func(identity string) {
				c.mu.Lock()
				defer c.mu.Unlock()
				c.newLeaders = append(c.newLeaders, identity)
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	c.elector = elector
	runCtx, cancel := context.WithCancel(ctx)
	c.cancel = cancel
	go func() {
		defer close(c.done)
		elector.Run(runCtx)
	}()
	t.Cleanup(func() {
		cancel()
		<-c.done
	})
	return c
}

func (c *candidate) leading() bool {
	select {
	case <-c.started:
		return true
	default:
		return false
	}
}

func (c *candidate) sawLeader(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Contains(c.newLeaders, id)
}

func (c *candidate) stoppedLeading() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopped
}

func TestLeaderElection(t *testing.T) {
	srv, ctx := start(t)
	cs := srv.Clientset(t)
	const ns = "election"
	createNamespace(t, ctx, cs, ns)
	leases := cs.CoordinationV1().Leases(ns)
	getLease := func() *coordinationv1.Lease {
		t.Helper()
		lease, err := leases.Get(ctx, leaseName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("getting the Lease: %v", err)
		}
		return lease
	}
	holder := func(l *coordinationv1.Lease) string {
		if l.Spec.HolderIdentity == nil {
			return "<nil>"
		}
		return *l.Spec.HolderIdentity
	}

	a := runCandidate(t, ctx, srv.Config, ns, "candidate-a")
	b := runCandidate(t, ctx, srv.Config, ns, "candidate-b")

	var leader, follower *candidate
	select {
	case <-a.started:
		leader, follower = a, b
	case <-b.started:
		leader, follower = b, a
	case <-time.After(15 * time.Second):
		t.Fatal("no candidate started leading within 15 s")
	}
	t.Logf("%s leads", leader.id)

	// Exactly one leads, for longer than a lease: the other keeps seeing a
	// valid lease held by the leader.
	select {
	case <-follower.started:
		t.Fatalf("both %s and %s lead", leader.id, follower.id)
	case <-time.After(leaseDuration + 500*time.Millisecond):
	}
	if !leader.elector.IsLeader() || follower.elector.IsLeader() {
		t.Errorf("IsLeader: %s %v, %s %v; want only %s", leader.id, leader.elector.IsLeader(), follower.id, follower.elector.IsLeader(), leader.id)
	}
	if got := follower.elector.GetLeader(); got != leader.id {
		t.Errorf("%s sees %q as the leader, want %s", follower.id, got, leader.id)
	}
	if !follower.sawLeader(leader.id) {
		t.Errorf("%s's OnNewLeader was not called with %s", follower.id, leader.id)
	}

	lease := getLease()
	if holder(lease) != leader.id {
		t.Errorf("the Lease's holderIdentity is %s, want the leader %s", holder(lease), leader.id)
	}
	if d := lease.Spec.LeaseDurationSeconds; d == nil || *d != int32(leaseDuration/time.Second) {
		t.Errorf("the Lease's leaseDurationSeconds is %v, want %d", d, leaseDuration/time.Second)
	}
	if lease.Spec.AcquireTime == nil || lease.Spec.RenewTime == nil {
		t.Errorf("the Lease lacks acquireTime or renewTime: %+v", lease.Spec)
	}
	if tr := lease.Spec.LeaseTransitions; tr == nil || *tr != 0 {
		t.Errorf("the Lease's leaseTransitions is %v, want 0", tr)
	}
	// The leader renews it (every RetryPeriod).
	firstRenew := lease.Spec.RenewTime
	eventually(t, ctx, 5*time.Second, "the leader renewing the Lease", func(ctx context.Context) error {
		l, err := leases.Get(ctx, leaseName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if l.Spec.RenewTime == nil || firstRenew == nil || !firstRenew.Before(l.Spec.RenewTime) {
			return fmt.Errorf("renewTime %v, first %v", l.Spec.RenewTime, firstRenew)
		}
		if holder(l) != leader.id {
			return fmt.Errorf("holderIdentity %s", holder(l))
		}
		return nil
	})

	// The leader's context ends: it releases the Lease (ReleaseOnCancel)
	// and the follower takes over.
	cancelled := time.Now()
	leader.cancel()
	select {
	case <-leader.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s's Run did not return within 10 s of its context's end", leader.id)
	}
	t.Logf("%s's Run returned %s after its context's end", leader.id, time.Since(cancelled).Round(time.Millisecond))
	if !leader.stoppedLeading() {
		t.Errorf("%s's OnStoppedLeading was not called", leader.id)
	}
	// Released: no holder (or the follower already).
	if l := getLease(); holder(l) != "" && holder(l) != follower.id {
		t.Errorf("after %s released it, the Lease's holderIdentity is %s", leader.id, holder(l))
	}
	select {
	case <-follower.started:
		t.Logf("%s took over %s after the leader's cancel", follower.id, time.Since(cancelled).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not take over within 10 s of %s releasing the Lease", follower.id, leader.id)
	}
	if !follower.elector.IsLeader() {
		t.Errorf("%s leads but IsLeader is false", follower.id)
	}
	lease = getLease()
	if holder(lease) != follower.id {
		t.Errorf("the Lease's holderIdentity is %s, want the new leader %s", holder(lease), follower.id)
	}
	if tr := lease.Spec.LeaseTransitions; tr == nil || *tr != 1 {
		t.Errorf("the Lease's leaseTransitions is %v, want 1", tr)
	}
	if d := lease.Spec.LeaseDurationSeconds; d == nil || *d != int32(leaseDuration/time.Second) {
		t.Errorf("the Lease's leaseDurationSeconds is %v, want %d", d, leaseDuration/time.Second)
	}

	// The new leader releases in turn.
	follower.cancel()
	<-follower.done
	if l := getLease(); holder(l) != "" {
		t.Errorf("after both released it, the Lease's holderIdentity is %q, want empty", holder(l))
	}
}
