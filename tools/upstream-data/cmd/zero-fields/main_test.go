package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/randfill"
)

// The table is read back from its TSV text, so the tests check the file
// format the Rust side reads, not an in-memory structure.
var (
	tableOnce sync.Once
	tableText []byte
	tableErr  error
	table     map[schema.GroupVersionKind][]Row
)

func loadTable(t *testing.T) map[schema.GroupVersionKind][]Row {
	t.Helper()
	tableOnce.Do(func() {
		all, kinds, err := Table(NewWalker())
		if err != nil {
			tableErr = err
			return
		}
		var buf bytes.Buffer
		if err := write(&buf, all, kinds); err != nil {
			tableErr = err
			return
		}
		tableText = buf.Bytes()
		table, tableErr = parseTable(tableText)
	})
	if tableErr != nil {
		t.Fatal(tableErr)
	}
	return table
}

func parseTable(text []byte) (map[schema.GroupVersionKind][]Row, error) {
	out := map[schema.GroupVersionKind][]Row{}
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) != 5 {
			return nil, fmt.Errorf("bad row %q", line)
		}
		group := cols[0]
		if group == "core" {
			group = ""
		}
		gvk := schema.GroupVersionKind{Group: group, Version: cols[1], Kind: cols[2]}
		out[gvk] = append(out[gvk], Row{Path: cols[3], Zero: cols[4]})
	}
	return out, sc.Err()
}

// segments splits a row path into field names and the "[]" / "{}" steps.
func segments(path string) []string {
	var out []string
	for _, part := range strings.Split(path, ".") {
		var suffix []string
		for {
			if s, ok := strings.CutSuffix(part, "[]"); ok {
				part, suffix = s, append([]string{"[]"}, suffix...)
			} else if s, ok := strings.CutSuffix(part, "{}"); ok {
				part, suffix = s, append([]string{"{}"}, suffix...)
			} else {
				break
			}
		}
		out = append(out, part)
		out = append(out, suffix...)
	}
	return out
}

// apply is the tiny applier: for every row, in order, every parent object the
// path reaches gets the row's zero value where the field is absent or null
// (Go decodes null into a non-pointer as a no-op, leaving the zero value). It
// returns the indexes of the rows that added something.
func apply(obj any, rows []Row) []int {
	var used []int
	for i, r := range rows {
		segs := segments(r.Path)
		parents := reach(obj, segs[:len(segs)-1])
		name := segs[len(segs)-1]
		for _, m := range parents {
			if v, ok := m[name]; !ok || v == nil {
				m[name] = decode([]byte(r.Zero))
				if len(used) == 0 || used[len(used)-1] != i {
					used = append(used, i)
				}
			}
		}
	}
	return used
}

func decode(b []byte) any {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		panic(fmt.Sprintf("decode %s: %v", b, err))
	}
	return v
}

func canonical(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

var types = Scheme().AllKnownTypes()

// compare decodes input into the Go type of gvk, encodes it again with
// encoding/json (what kube-apiserver does) and compares that with input plus
// rows. It returns the differences and the rows that added something.
func compare(gvk schema.GroupVersionKind, rows []Row, input []byte) ([]string, []int, error) {
	typ, found := types[gvk]
	if !found {
		return nil, nil, fmt.Errorf("%v not in scheme", gvk)
	}
	obj := reflect.New(typ).Interface()
	if err := json.Unmarshal(input, obj); err != nil {
		return nil, nil, fmt.Errorf("%v: unmarshal %s: %v", gvk, clip(string(input)), err)
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, nil, fmt.Errorf("%v: marshal: %v", gvk, err)
	}
	got := decode(input)
	used := apply(got, rows)
	return diff("", decode(out), got), used, nil
}

// check reports a test error unless the rows of gvk turn input into what Go
// writes for it.
func check(t *testing.T, gvk schema.GroupVersionKind, input []byte) ([]int, bool) {
	t.Helper()
	d, used, err := compare(gvk, loadTable(t)[gvk], input)
	if err != nil {
		t.Fatal(err)
	}
	if len(d) > 0 {
		t.Errorf("%v: input\n%s\ndifferences: %s", gvk, clip(string(input)), strings.Join(d, "; "))
		return used, false
	}
	return used, true
}

func clip(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "..."
	}
	return s
}

func diff(path string, a, b any) []string {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		var out []string
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		var ks []string
		for k := range keys {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		for _, k := range ks {
			av, ain := am[k]
			bv, bin := bm[k]
			switch {
			case !ain:
				out = append(out, fmt.Sprintf("%s.%s only from rows (%s)", path, k, canonical(bv)))
			case !bin:
				out = append(out, fmt.Sprintf("%s.%s only from Go (%s)", path, k, canonical(av)))
			default:
				out = append(out, diff(path+"."+k, av, bv)...)
			}
		}
		return out
	}
	aa, aok := a.([]any)
	ba, bok := b.([]any)
	if aok && bok && len(aa) == len(ba) {
		var out []string
		for i := range aa {
			out = append(out, diff(fmt.Sprintf("%s[%d]", path, i), aa[i], ba[i])...)
		}
		return out
	}
	if canonical(a) != canonical(b) {
		return []string{fmt.Sprintf("%s: Go %s, rows %s", path, canonical(a), canonical(b))}
	}
	return nil
}

func gvk(group, version, kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
}

// TestSanity: the minimal objects of the brief.
func TestSanity(t *testing.T) {
	template := `{"metadata":{"labels":{"app":"x"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`
	cases := []struct {
		gvk  schema.GroupVersionKind
		json string
	}{
		{gvk("", "v1", "Pod"), `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default"},
			"spec":{"containers":[{"name":"c","image":"nginx"}]}}`},
		{gvk("apps", "v1", "Deployment"), `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},
			"spec":{"selector":{"matchLabels":{"app":"x"}},"template":` + template + `}}`},
		{gvk("", "v1", "Service"), `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},
			"spec":{"selector":{"app":"x"},"ports":[{"port":80}]}}`},
		{gvk("", "v1", "ReplicationController"), `{"apiVersion":"v1","kind":"ReplicationController","metadata":{"name":"rc"},
			"spec":{"replicas":1,"selector":{"app":"x"},"template":` + template + `}}`},
		{gvk("batch", "v1", "Job"), `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"},
			"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}`},
	}
	for _, c := range cases {
		used, _ := check(t, c.gvk, []byte(c.json))
		t.Logf("%v: %d rows added something", c.gvk, len(used))
	}
}

// TestApplierCatchesMissingRow: the comparison is not vacuous; leaving out
// any one row the sanity Pod needs makes it fail.
func TestApplierCatchesMissingRow(t *testing.T) {
	k := gvk("", "v1", "Pod")
	input := []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`)
	rows := loadTable(t)[k]
	_, used, err := compare(k, rows, input)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range used {
		fewer := append(append([]Row{}, rows[:i]...), rows[i+1:]...)
		d, _, _ := compare(k, fewer, input)
		if len(d) == 0 {
			t.Errorf("leaving out %v went unnoticed", rows[i])
		}
	}
}

// TestEveryKindMinimal: every kind with nothing but apiVersion and kind.
func TestEveryKindMinimal(t *testing.T) {
	tab := loadTable(t)
	kinds := Kinds(Scheme())
	if len(kinds) != len(tab) {
		// Kinds without any row are absent from the table; count them.
		t.Logf("%d kinds, %d with rows", len(kinds), len(tab))
	}
	for _, k := range kinds {
		apiVersion := k.GroupVersion().String()
		check(t, k, []byte(fmt.Sprintf(`{"apiVersion":%q,"kind":%q}`, apiVersion, k.Kind)))
	}
}

// randomJSON is a random object of kind k as encoding/json writes it.
func randomJSON(t *testing.T, k schema.GroupVersionKind, seed int64) any {
	t.Helper()
	obj := reflect.New(types[k]).Interface()
	newFiller(seed, k).Fill(obj)
	obj.(runtime.Object).GetObjectKind().SetGroupVersionKind(k)
	full, err := json.Marshal(obj)
	if err != nil {
		t.Fatalf("%v seed %d: marshal: %v", k, seed, err)
	}
	return decode(full)
}

// keepFor names the members prune must not drop at random for kind k.
func keepFor(k schema.GroupVersionKind) map[string]bool {
	if k.Group == "apiextensions.k8s.io" {
		// Validation requires x-kubernetes-validations[].rule; the table
		// leaves it out below the JSONSchemaProps recursion cut-off.
		return map[string]bool{"rule": true}
	}
	return nil
}

func randomCount() int {
	if testing.Short() {
		return 3
	}
	return 40
}

// TestRandomObjects: random objects of every kind, stripped of their
// zero-ish members and a third of the others, so that rows deep under
// arrays, maps and pointers are exercised in combination.
func TestRandomObjects(t *testing.T) {
	tab := loadTable(t)
	failures, objects, rowsUsed, rowsTotal := 0, 0, 0, 0
	for _, k := range Kinds(Scheme()) {
		usedRows := map[int]bool{}
		for i := 0; i < randomCount() && failures < 5; i++ {
			seed := int64(i + 1)
			input := prune(randomJSON(t, k, seed), rand.New(rand.NewSource(seed)), keepFor(k))
			used, ok := check(t, k, []byte(canonical(input)))
			if !ok {
				failures++
			}
			for _, u := range used {
				usedRows[u] = true
			}
			objects++
		}
		rowsUsed += len(usedRows)
		rowsTotal += len(tab[k])
	}
	t.Logf("%d random objects; %d of %d rows added something at least once", objects, rowsUsed, rowsTotal)
}

// TestEveryRow: each row on its own. For every row, a random object with the
// row's parent present (stripped of zero-ish members only) loses the row's
// field at every parent (every other row: gets null there instead); Go must
// write back exactly what the rows add, and the row itself must be what adds
// it (unless its zero is null and the field was set to null).
func TestEveryRow(t *testing.T) {
	tab := loadTable(t)
	tested, total, failures := 0, 0, 0
	var untested []string
	for _, k := range Kinds(Scheme()) {
		rows := tab[k]
		total += len(rows)
		var pool []any
		for i := 0; i < randomCount(); i++ {
			pool = append(pool, prune(randomJSON(t, k, int64(i+1)), nil, nil))
		}
		for j, r := range rows {
			segs := segments(r.Path)
			name := segs[len(segs)-1]
			done := false
			for _, base := range pool {
				input := decode([]byte(canonical(base)))
				parents := reach(input, segs[:len(segs)-1])
				if len(parents) == 0 {
					continue
				}
				for _, p := range parents {
					if j%2 == 0 {
						delete(p, name)
					} else {
						p[name] = nil
					}
				}
				b := []byte(canonical(input))
				d, used, err := compare(k, rows, b)
				if err != nil {
					t.Fatal(err)
				}
				if len(d) > 0 {
					t.Errorf("%v row %s: input\n%s\ndifferences: %s", k, r.Path, clip(string(b)), strings.Join(d, "; "))
					failures++
				} else if !slices.Contains(used, j) && !(j%2 == 1 && r.Zero == "null") {
					t.Errorf("%v row %s: not used although its field was removed", k, r.Path)
					failures++
				}
				done = true
				break
			}
			if done {
				tested++
			} else {
				untested = append(untested, k.String()+" "+r.Path)
			}
			if failures > 10 {
				t.FailNow()
			}
		}
	}
	t.Logf("%d of %d rows tested on their own; no random object reached the parent of the others", tested, total)
	if testing.Verbose() {
		for _, u := range untested {
			t.Logf("untested: %s", u)
		}
	}
}

// reach returns the objects a parent path (row path segments) leads to.
func reach(obj any, segs []string) []map[string]any {
	parents := []any{obj}
	for _, s := range segs {
		var next []any
		for _, p := range parents {
			switch s {
			case "[]":
				if a, ok := p.([]any); ok {
					next = append(next, a...)
				}
			case "{}":
				if m, ok := p.(map[string]any); ok {
					for _, v := range m {
						next = append(next, v)
					}
				}
			default:
				if m, ok := p.(map[string]any); ok {
					if v, ok := m[s]; ok {
						next = append(next, v)
					}
				}
			}
		}
		parents = next
	}
	var out []map[string]any
	for _, p := range parents {
		if m, ok := p.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// prune drops the object members that are null, "", 0, false, {} or [],
// innermost first, as a client that leaves out what it does not set, and a
// third of the others at random (unless r is nil), so that rows are needed under present
// parents. (A present empty value of an omitempty field is dropped by Go;
// that is not what the table is about.) Members named in keep are only
// dropped when zero-ish.
func prune(v any, r *rand.Rand, keep map[string]bool) any {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			e := prune(x[k], r, keep)
			x[k] = e
			if zeroish(e) || r != nil && !keep[k] && r.Intn(3) == 0 {
				delete(x, k)
			}
		}
	case []any:
		for i, e := range x {
			x[i] = prune(e, r, keep)
		}
	}
	return v
}

func zeroish(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bool:
		return !x
	case json.Number:
		return x.String() == "0"
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

func newFiller(seed int64, k schema.GroupVersionKind) *randfill.Filler {
	depth := 24
	if k.Group == "apiextensions.k8s.io" {
		depth = 12 // JSONSchemaProps nests itself many ways
	}
	return randfill.NewWithSeed(seed).NilChance(0.25).NumElements(1, 2).MaxDepth(depth).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewQuantity(int64(c.Intn(1000)), resource.DecimalSI)
		},
		func(e *runtime.RawExtension, c randfill.Continue) {
			if c.Bool() {
				e.Raw = []byte(`{"apiVersion":"v1","kind":"Foo"}`)
			}
		},
		func(f *metav1.FieldsV1, c randfill.Continue) {
			f.Raw = []byte(`{"f:metadata":{}}`)
		},
		func(d *metav1.Duration, c randfill.Continue) {
			d.Duration = 0
		},
		func(j *apiextensionsv1.JSON, c randfill.Continue) { j.Raw = []byte(`{"a":1}`) },
		func(j *apiextensionsv1beta1.JSON, c randfill.Continue) { j.Raw = []byte(`{"a":1}`) },
		// CRD validation requires a non-empty rule; rows below the
		// JSONSchemaProps recursion cut-off (only rule) are not in the table.
		func(v *apiextensionsv1.ValidationRule, c randfill.Continue) {
			c.FillNoCustom(v)
			v.Rule = "self > 0"
		},
		func(v *apiextensionsv1beta1.ValidationRule, c randfill.Continue) {
			c.FillNoCustom(v)
			v.Rule = "self > 0"
		},
	)
}

// TestFileUpToDate: the checked-in table is what the generator writes now.
func TestFileUpToDate(t *testing.T) {
	loadTable(t)
	const path = "../../../../crates/registry/data/go-zero-fields.tsv"
	have, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		t.Skipf("%s not found", path)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, tableText) {
		t.Errorf("%s is stale; regenerate it: %s", path, command)
	}
}
