package serialization

import (
	"bytes"
	"context"
	stdjson "encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"kubext.dev/go/internal/kubexttest"
)

// namespace holds every namespaced object of the manifests.
const namespace = "serialization"

// userAgent names the field manager of every object (managedFields' manager
// is the user agent's first part), the same on both servers.
const userAgent = "serialization.test/v0"

// compareAnnotation set to "false" creates an object without comparing it.
const compareAnnotation = "serialization.kubext.dev/compare"

// dataDir is docs/research/serialization: the manifests (objects/) and
// kube-apiserver's recorded answers (upstream/).
func dataDir(t testing.TB) string {
	return filepath.Join(kubexttest.ModuleRoot(t), "..", "docs", "research", "serialization")
}

// object is one manifest document.
type object struct {
	file      string
	json      []byte
	gvk       schema.GroupVersionKind
	name      string
	namespace string
	compare   bool
}

// loadObjects reads objects/*.yaml in file order, documents in order:
// the order they are created in.
func loadObjects(t testing.TB) []object {
	files, err := filepath.Glob(filepath.Join(dataDir(t), "objects", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s: %v", filepath.Join(dataDir(t), "objects"), err)
	}
	sort.Strings(files)
	var out []object
	for _, file := range files {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range strings.Split("\n"+string(text), "\n---\n") {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			js, err := yaml.YAMLToJSON([]byte(doc))
			if err != nil {
				t.Fatalf("%s document %d: %v", file, i, err)
			}
			var head struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				Metadata   struct {
					Name        string            `json:"name"`
					Namespace   string            `json:"namespace"`
					Annotations map[string]string `json:"annotations"`
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal(js, &head); err != nil {
				t.Fatalf("%s document %d: %v", file, i, err)
			}
			gv, err := schema.ParseGroupVersion(head.APIVersion)
			if err != nil || head.Kind == "" || head.Metadata.Name == "" {
				t.Fatalf("%s document %d: apiVersion %q, kind %q, name %q", file, i, head.APIVersion, head.Kind, head.Metadata.Name)
			}
			out = append(out, object{
				file:      filepath.Base(file),
				json:      js,
				gvk:       gv.WithKind(head.Kind),
				name:      head.Metadata.Name,
				namespace: head.Metadata.Namespace,
				compare:   head.Metadata.Annotations[compareAnnotation] != "false",
			})
		}
	}
	return out
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// servedVersion is one group-version serving a resource of a kind.
type servedVersion struct {
	gv         schema.GroupVersion
	resource   string
	namespaced bool
	verbs      []string
}

// servedKinds is every kind a server's discovery lists (subresources left
// out), with the versions serving it.
func servedKinds(t testing.TB, cfg *rest.Config) map[schema.GroupKind][]servedVersion {
	client, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, lists, err := client.ServerGroupsAndResources()
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	kinds := map[schema.GroupKind][]servedVersion{}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			gk := gv.WithKind(r.Kind).GroupKind()
			kinds[gk] = append(kinds[gk], servedVersion{gv: gv, resource: r.Name, namespaced: r.Namespaced, verbs: r.Verbs})
		}
	}
	for _, versions := range kinds {
		sort.Slice(versions, func(i, j int) bool { return versions[i].gv.Version < versions[j].gv.Version })
	}
	return kinds
}

// server is either kubext or kube-apiserver, spoken to over plain HTTP(S)
// so that the bytes compared are the bytes served.
type server struct {
	name   string
	base   string
	client *http.Client
	kinds  map[schema.GroupKind][]servedVersion
}

func newServer(t testing.TB, name string, cfg *rest.Config) *server {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = userAgent
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &server{name: name, base: strings.TrimSuffix(cfg.Host, "/"), client: client, kinds: servedKinds(t, cfg)}
}

func (s *server) path(v servedVersion, ns, name string) string {
	p := "/apis/" + v.gv.String()
	if v.gv.Group == "" {
		p = "/api/" + v.gv.Version
	}
	if v.namespaced && ns != "" {
		p += "/namespaces/" + ns
	}
	p += "/" + v.resource
	if name != "" {
		p += "/" + name
	}
	return p
}

func (s *server) do(method, path string, body []byte) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// version is the served version of o's kind in o's own group-version.
func (s *server) version(o object) (servedVersion, bool) {
	for _, v := range s.kinds[o.gvk.GroupKind()] {
		if v.gv == o.gvk.GroupVersion() {
			return v, true
		}
	}
	return servedVersion{}, false
}

// createAll creates the objects in order; the default ServiceAccount may
// exist already (kubext's controller makes it).
func (s *server) createAll(t testing.TB, objects []object) {
	for _, o := range objects {
		v, ok := s.version(o)
		if !ok {
			t.Fatalf("%s: %s serves no %v (%s)", s.name, s.name, o.gvk, o.file)
		}
		status, body, err := s.do(http.MethodPost, s.path(v, o.namespace, ""), o.json)
		switch {
		case err != nil:
			t.Fatalf("%s: creating %v %s: %v", s.name, o.gvk, o.name, err)
		case status == http.StatusConflict && !o.compare:
		case status != http.StatusCreated && status != http.StatusOK:
			t.Fatalf("%s: creating %v %s (%s): %d %s", s.name, o.gvk, o.name, o.file, status, body)
		}
	}
}

// get is o read at version v, the body as served.
func (s *server) get(t testing.TB, o object, v servedVersion) []byte {
	status, body, err := s.do(http.MethodGet, s.path(v, o.namespace, o.name), nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("%s: GET %s: %d %v %s", s.name, s.path(v, o.namespace, o.name), status, err, body)
	}
	return body
}

// read is one GET of a compared object at one served version of its kind.
type read struct {
	obj     object
	version servedVersion
	body    []byte
}

// id names a read: <group|core>.<version>.<Kind>.<name>, the golden file's name.
func (r read) id() string {
	group := r.version.gv.Group
	if group == "" {
		group = "core"
	}
	return fmt.Sprintf("%s.%s.%s.%s", group, r.version.gv.Version, r.obj.gvk.Kind, r.obj.name)
}

// readAll GETs every compared object at every version of its kind the
// server serves, after a moment for what servers do on their own right
// after a create (conditions of CRDs, APIServices, ServiceCIDRs).
func (s *server) readAll(t testing.TB, objects []object) []read {
	time.Sleep(settle)
	var out []read
	for _, o := range objects {
		if !o.compare {
			continue
		}
		for _, v := range s.kinds[o.gvk.GroupKind()] {
			out = append(out, read{obj: o, version: v, body: s.get(t, o, v)})
		}
	}
	return out
}

// settle is how long a server is left after the creates before the GETs.
const settle = 2 * time.Second

// watched is what a watch of one kind's resource at one version sent.
type watched struct {
	gk      schema.GroupKind
	version servedVersion
	// failure describes the first event that is not Go's encoding ("" if none).
	failure string
}

// watchAll watches, at once, every served version of every kind with a
// compared object from resourceVersion 0 for a second, and checks each
// event line is `{"type":…,"object":…}` with the object as Go re-encodes it.
func (s *server) watchAll(t testing.TB, objects []object) []watched {
	var out []watched
	seen := map[schema.GroupKind]bool{}
	for _, o := range objects {
		gk := o.gvk.GroupKind()
		if !o.compare || seen[gk] {
			continue
		}
		seen[gk] = true
		for _, v := range s.kinds[gk] {
			out = append(out, watched{gk: gk, version: v})
		}
	}
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func(w *watched) {
			defer wg.Done()
			w.failure = s.checkWatch(w.version)
		}(&out[i])
	}
	wg.Wait()
	return out
}

func (s *server) checkWatch(v servedVersion) string {
	status, body, err := s.do(http.MethodGet, s.path(v, "", "")+"?watch=1&resourceVersion=0&timeoutSeconds=1", nil)
	if err != nil || status != http.StatusOK {
		return fmt.Sprintf("watch: %d %v %s", status, err, body)
	}
	events := 0
	for _, line := range bytes.SplitAfter(body, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var event struct {
			Type   string             `json:"type"`
			Object stdjson.RawMessage `json:"object"`
		}
		if err := stdjson.Unmarshal(line, &event); err != nil {
			return fmt.Sprintf("event %d: %v: %s", events, err, line)
		}
		events++
		framed := `{"type":"` + event.Type + `","object":` + string(event.Object) + "}\n"
		if string(line) != framed {
			return "event framing:\n" + diff([]byte(framed), line)
		}
		object := append(append([]byte{}, event.Object...), '\n')
		if failure := goEncodingFailure(object); failure != "" {
			return fmt.Sprintf("event %d: %s", events, failure)
		}
	}
	if events == 0 {
		return "no events"
	}
	return ""
}
