package main

import (
	"bytes"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	flowcontrolapisv1 "k8s.io/kubernetes/pkg/apis/flowcontrol/v1"
)

// TestDefaultingIsNoOp: kube-apiserver creates these objects through its own
// API, which applies v1 defaulting; the file is only what gets stored if
// defaulting changes nothing.
func TestDefaultingIsNoOp(t *testing.T) {
	b := Build()
	for _, set := range []Set{b.Mandatory, b.Suggested} {
		for _, fs := range set.FlowSchemas {
			d := fs.DeepCopy()
			flowcontrolapisv1.SetObjectDefaults_FlowSchema(d)
			if !equality.Semantic.DeepEqual(d, fs) {
				t.Errorf("defaulting changes FlowSchema %s", fs.Name)
			}
		}
		for _, pl := range set.PriorityLevelConfigurations {
			d := pl.DeepCopy()
			flowcontrolapisv1.SetObjectDefaults_PriorityLevelConfiguration(d)
			if !equality.Semantic.DeepEqual(d, pl) {
				t.Errorf("defaulting changes PriorityLevelConfiguration %s", pl.Name)
			}
		}
	}
}

// TestCounts: a default kube-apiserver 1.37.2 serves 11 FlowSchemas and 8
// PriorityLevelConfigurations (1.33 served 13 and 8).
func TestCounts(t *testing.T) {
	b := Build()
	if len(b.Mandatory.FlowSchemas) != 2 || len(b.Mandatory.PriorityLevelConfigurations) != 2 ||
		len(b.Suggested.FlowSchemas) != 9 || len(b.Suggested.PriorityLevelConfigurations) != 6 {
		t.Errorf("unexpected counts: %d %d %d %d", len(b.Mandatory.FlowSchemas), len(b.Mandatory.PriorityLevelConfigurations),
			len(b.Suggested.FlowSchemas), len(b.Suggested.PriorityLevelConfigurations))
	}
}

// TestFileUpToDate: the checked-in file is what the generator writes now.
func TestFileUpToDate(t *testing.T) {
	const path = "../../../../crates/controlplane/data/apf-bootstrap.json"
	have, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		t.Skipf("%s not found", path)
	}
	if err != nil {
		t.Fatal(err)
	}
	want, err := Encode(Build())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, want) {
		t.Errorf("%s is stale; regenerate it: go run ./cmd/apf-bootstrap -o %s", path, path)
	}
}
