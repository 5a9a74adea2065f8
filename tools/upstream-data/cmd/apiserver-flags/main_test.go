package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestFilesUpToDate: the checked-in files are what the generator writes now.
// (Run may be called once per process: kube-apiserver's command installs the
// process's signal handler.)
func TestFilesUpToDate(t *testing.T) {
	r, err := Run()
	if err != nil {
		t.Fatal(err)
	}
	var tsv bytes.Buffer
	if err := r.WriteTSV(&tsv); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(r.Help), "The Kubernetes API server validates") {
		t.Errorf("unexpected help text start: %.80q", r.Help)
	}
	for path, want := range map[string][]byte{tsvPath: tsv.Bytes(), helpPath: r.Help} {
		have, err := os.ReadFile("../../" + path)
		if os.IsNotExist(err) {
			t.Logf("%s not found", path)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(have, want) {
			t.Errorf("%s is stale; regenerate it: %s", path, command)
		}
	}
}
