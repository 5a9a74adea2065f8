package serialization

import (
	"bytes"
	stdjson "encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// upstreamScheme holds k8s.io/api's types (client-go's scheme) and the two
// groups kube-apiserver serves from its own modules.
func upstreamScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(apiregistrationv1.AddToScheme(s))
	return s
}

var (
	scheme = upstreamScheme()
	// strictJSON is kube-apiserver's JSON serializer (the one it encodes
	// responses with), decoding strictly: unknown or duplicate fields are
	// errors.
	strictJSON = json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme,
		json.SerializerOptions{Strict: true})
)

// reencode decodes body into its k8s.io/api type and encodes it again with
// upstream's serializer: the bytes kube-apiserver writes for that object.
// A kind no scheme knows (a custom resource, or a list of them) is what
// kube-apiserver holds as unstructured.Unstructured: decoded into maps
// (integers kept as int64, other numbers float64) and encoded by
// encoding/json (every object's members sorted by name, Go's float text,
// HTML-safe escapes).
func reencode(body []byte) ([]byte, error) {
	if gvk, err := json.DefaultMetaFactory.Interpret(body); err == nil && gvk.Kind != "" && !scheme.Recognizes(*gvk) {
		obj, _, err := unstructured.UnstructuredJSONScheme.Decode(body, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("decoding as unstructured: %w", err)
		}
		var out bytes.Buffer
		if err := unstructured.UnstructuredJSONScheme.Encode(obj, &out); err != nil {
			return nil, err
		}
		return out.Bytes(), nil
	}
	obj, _, err := strictJSON.Decode(body, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("strict decoding: %w", err)
	}
	var out bytes.Buffer
	if err := strictJSON.Encode(obj, &out); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// normalizers replace what differs from run to run, the same on both
// servers' answers: uids, resourceVersions, times written by the server,
// generated names and allocated addresses.
var normalizers = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), "UID"},
	{regexp.MustCompile(`"resourceVersion":"[0-9]+"`), `"resourceVersion":"RV"`},
	// Times the server writes; the manifests' own times are in 2026-01-02.
	{regexp.MustCompile(`"(?:19|20[0-9][0-9]-(?:0[0-9]|1[0-2])-(?:0[013-9]|[1-3][0-9])|2026-01-02T(?:0[0-24-9]|[1-2][0-9]))[-0-9T:.]*Z"`), `"TIME"`},
	{regexp.MustCompile(`kube-api-access-[a-z0-9]{5}`), "kube-api-access-XXXXX"},
	{regexp.MustCompile(`"clusterIP":"[0-9.]+"`), `"clusterIP":"CLUSTER-IP"`},
	{regexp.MustCompile(`"clusterIPs":\["[0-9.]+"\]`), `"clusterIPs":["CLUSTER-IP"]`},
	{regexp.MustCompile(`"(nodePort|healthCheckNodePort)":[0-9]+`), `"$1":"NODE-PORT"`},
}

// normalize applies normalizers.
func normalize(body []byte) []byte {
	for _, n := range normalizers {
		body = n.re.ReplaceAll(body, []byte(n.with))
	}
	return body
}

// diff shows where two encodings part: the common prefix's last bytes,
// then each side's next bytes, and the JSON members that differ.
func diff(want, got []byte) string {
	at := 0
	for at < len(want) && at < len(got) && want[at] == got[at] {
		at++
	}
	from := max(0, at-120)
	clip := func(b []byte) string {
		return string(b[at:min(len(b), at+160)])
	}
	var b strings.Builder
	fmt.Fprintf(&b, "first difference at byte %d, after …%s\n", at, want[from:at])
	fmt.Fprintf(&b, "    upstream: %s\n", clip(want))
	fmt.Fprintf(&b, "    kubext:   %s\n", clip(got))
	var wantValue, gotValue any
	if stdjson.Unmarshal(want, &wantValue) == nil && stdjson.Unmarshal(got, &gotValue) == nil {
		var paths []string
		valueDiff("", wantValue, gotValue, &paths)
		if len(paths) == 0 {
			b.WriteString("    the same values: only the member order or the text of a value differs\n")
		}
		for _, p := range paths {
			fmt.Fprintf(&b, "    %s\n", p)
		}
	}
	return b.String()
}

// valueDiff lists the paths where two decoded JSON values differ, with
// both sides.
func valueDiff(path string, want, got any, out *[]string) {
	wantMap, wantIsMap := want.(map[string]any)
	gotMap, gotIsMap := got.(map[string]any)
	if wantIsMap && gotIsMap {
		keys := map[string]bool{}
		for k := range wantMap {
			keys[k] = true
		}
		for k := range gotMap {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			w, inWant := wantMap[k]
			g, inGot := gotMap[k]
			switch {
			case !inGot:
				*out = append(*out, fmt.Sprintf("%s.%s: upstream %s, kubext has none", path, k, compact(w)))
			case !inWant:
				*out = append(*out, fmt.Sprintf("%s.%s: kubext %s, upstream has none", path, k, compact(g)))
			default:
				valueDiff(path+"."+k, w, g, out)
			}
		}
		return
	}
	wantList, wantIsList := want.([]any)
	gotList, gotIsList := got.([]any)
	if wantIsList && gotIsList && len(wantList) == len(gotList) {
		for i := range wantList {
			valueDiff(fmt.Sprintf("%s[%d]", path, i), wantList[i], gotList[i], out)
		}
		return
	}
	if !reflect.DeepEqual(want, got) {
		*out = append(*out, fmt.Sprintf("%s: upstream %s, kubext %s", path, compact(want), compact(got)))
	}
}

func compact(v any) string {
	b, _ := stdjson.Marshal(v)
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}
