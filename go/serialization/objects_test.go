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
	"regexp"
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

// stepAnnotation makes a document a write to an object an earlier document
// created, its answer compared as the read <id>.<step>:
//
//   - "status": the document's status PUT through the status subresource
//     onto the object as last answered;
//   - "apply": the document sent as a server-side apply (field manager
//     applyManager).
const stepAnnotation = "serialization.kubext.dev/step"

// applyManager is the field manager of the "apply" steps.
const applyManager = "serialization-apply"

// uidPlaceholder in a manifest, as $(uid <Kind> <namespace>/<name>), is
// replaced by the uid of the object an earlier document created (an owner
// reference must name a live owner, or the garbage collector deletes the
// dependent).
var uidPlaceholder = regexp.MustCompile(`\$\(uid ([A-Za-z]+) ([a-z0-9.-]*)/([a-z0-9.-]+)\)`)

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
	// step is a write to the object an earlier document created
	// (stepAnnotation), "" for a create.
	step string
}

// loadObjects reads objects/*.yaml in file order, documents in order:
// the order they are created in. A document that is a JSON object is sent
// as written (a YAML document's numbers pass through Go's float64, so only
// JSON keeps a number's text, 1.0 or 1e2, for the servers to see).
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
			if raw := strings.TrimSpace(stripComments(doc)); strings.HasPrefix(raw, "{") {
				js, err = []byte(raw), nil
				if !stdjson.Valid(js) {
					err = fmt.Errorf("not valid JSON")
				}
			}
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
				step:      head.Metadata.Annotations[stepAnnotation],
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
	cfg    *rest.Config
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
	return &server{name: name, base: strings.TrimSuffix(cfg.Host, "/"), cfg: cfg, client: client, kinds: servedKinds(t, cfg)}
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
	contentType := ""
	if body != nil {
		contentType = "application/json"
	}
	return s.send(method, path, contentType, body)
}

func (s *server) send(method, path, contentType string, body []byte) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// version is the served version of o's kind in o's own group-version,
// waiting up to half a minute for discovery to list it (the kind of a
// custom resource is served once its CRD, created before it, is
// established).
func (s *server) version(t testing.TB, o object) (servedVersion, bool) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, v := range s.kinds[o.gvk.GroupKind()] {
			if v.gv == o.gvk.GroupVersion() {
				return v, true
			}
		}
		if time.Now().After(deadline) {
			return servedVersion{}, false
		}
		time.Sleep(200 * time.Millisecond)
		s.kinds = servedKinds(t, s.cfg)
	}
}

// createAll creates the objects in order, and makes the writes the step
// documents ask for; the default ServiceAccount may exist already
// (kubext's controller makes it). It returns the answers of the writes
// compared: every custom resource's create (its kind is in no Go scheme:
// kube-apiserver writes it as unstructured JSON) and every step's.
func (s *server) createAll(t testing.TB, objects []object) []read {
	uids := map[string]string{}
	last := map[string][]byte{}
	var answers []read
	for _, o := range objects {
		v, ok := s.version(t, o)
		if !ok {
			t.Fatalf("%s: %s serves no %v (%s)", s.name, s.name, o.gvk, o.file)
		}
		key := o.gvk.Kind + " " + o.namespace + "/" + o.name
		body := uidPlaceholder.ReplaceAllFunc(o.json, func(m []byte) []byte {
			sub := uidPlaceholder.FindSubmatch(m)
			uid, ok := uids[string(sub[1])+" "+string(sub[2])+"/"+string(sub[3])]
			if !ok {
				t.Fatalf("%s: %s names no object created before it", o.file, m)
			}
			return []byte(uid)
		})
		var status int
		var answer []byte
		var err error
		// A custom resource's kind is in discovery a moment before its
		// handler serves it (kube-apiserver answers 503 meanwhile).
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			switch o.step {
			case "":
				status, answer, err = s.do(http.MethodPost, s.path(v, o.namespace, ""), body)
			case "status":
				status, answer, err = s.putStatus(v, o, last[key], body)
			case "apply":
				status, answer, err = s.send(http.MethodPatch, s.path(v, o.namespace, o.name)+"?fieldManager="+applyManager,
					"application/apply-patch+yaml", body)
			default:
				t.Fatalf("%s: %s %s: unknown step %q", o.file, o.gvk.Kind, o.name, o.step)
			}
			if err != nil || status != http.StatusServiceUnavailable || time.Now().After(deadline) {
				break
			}
		}
		switch {
		case err != nil:
			t.Fatalf("%s: writing %v %s: %v", s.name, o.gvk, o.name, err)
		case status == http.StatusConflict && !o.compare:
			continue
		case status != http.StatusCreated && status != http.StatusOK:
			t.Fatalf("%s: writing %v %s (%s, step %q): %d %s", s.name, o.gvk, o.name, o.file, o.step, status, answer)
		}
		var head struct {
			Metadata struct {
				UID string `json:"uid"`
			} `json:"metadata"`
		}
		if err := stdjson.Unmarshal(answer, &head); err != nil {
			t.Fatalf("%s: the answer to %v %s: %v", s.name, o.gvk, o.name, err)
		}
		uids[key] = head.Metadata.UID
		last[key] = answer
		if o.compare && (o.step != "" || !scheme.Recognizes(o.gvk)) {
			step := o.step
			if step == "" {
				step = "create"
			}
			answers = append(answers, read{obj: o, version: v, step: step, body: answer})
		}
	}
	return answers
}

// putStatus writes the status of doc onto the object as last answered,
// through its status subresource.
func (s *server) putStatus(v servedVersion, o object, last, doc []byte) (int, []byte, error) {
	var current, step map[string]any
	if err := stdjson.Unmarshal(last, &current); err != nil {
		return 0, nil, fmt.Errorf("no earlier answer for %s: %w", o.name, err)
	}
	if err := stdjson.Unmarshal(doc, &step); err != nil {
		return 0, nil, err
	}
	current["status"] = step["status"]
	body, err := stdjson.Marshal(current)
	if err != nil {
		return 0, nil, err
	}
	return s.do(http.MethodPut, s.path(v, o.namespace, o.name)+"/status", body)
}

// get is o read at version v, the body as served.
func (s *server) get(t testing.TB, o object, v servedVersion) []byte {
	status, body, err := s.do(http.MethodGet, s.path(v, o.namespace, o.name), nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("%s: GET %s: %d %v %s", s.name, s.path(v, o.namespace, o.name), status, err, body)
	}
	return body
}

// read is one GET of a compared object at one served version of its kind,
// or the answer to a write (step: "create", or the document's step).
type read struct {
	obj     object
	version servedVersion
	step    string
	body    []byte
}

// id names a read: <group|core>.<version>.<Kind>.<name>[.<step>], the
// golden file's name.
func (r read) id() string {
	group := r.version.gv.Group
	if group == "" {
		group = "core"
	}
	id := fmt.Sprintf("%s.%s.%s.%s", group, r.version.gv.Version, r.obj.gvk.Kind, r.obj.name)
	if r.step != "" {
		id += "." + r.step
	}
	return id
}

// readAll GETs every compared object at every version of its kind the
// server serves, after a moment for what servers do on their own right
// after a create (conditions of CRDs, APIServices, ServiceCIDRs).
func (s *server) readAll(t testing.TB, objects []object) []read {
	time.Sleep(settle)
	var out []read
	for _, o := range objects {
		if !o.compare || o.step != "" {
			continue
		}
		for _, v := range s.kinds[o.gvk.GroupKind()] {
			out = append(out, read{obj: o, version: v, body: s.get(t, o, v)})
		}
	}
	return out
}

// customLists LISTs each kind of custom resource with a compared object in
// the objects' namespace, at every version serving it: reads named
// <group>.<version>.<Kind>List.<namespace>, compared with kube-apiserver's
// answer too (a list's own members are kube-apiserver's unstructured
// list's).
func (s *server) customLists(t testing.TB, objects []object) []read {
	var out []read
	seen := map[schema.GroupKind]bool{}
	for _, o := range objects {
		gk := o.gvk.GroupKind()
		if !o.compare || seen[gk] || scheme.Recognizes(o.gvk) {
			continue
		}
		seen[gk] = true
		for _, v := range s.kinds[gk] {
			path := s.path(v, o.namespace, "")
			status, body, err := s.do(http.MethodGet, path, nil)
			if err != nil || status != http.StatusOK {
				t.Fatalf("%s: LIST %s: %d %v %s", s.name, path, status, err, body)
			}
			list := object{file: o.file, gvk: v.gv.WithKind(gk.Kind + "List"), name: o.namespace}
			out = append(out, read{obj: list, version: v, body: body})
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
