#!/usr/bin/env python3
"""Generate `src/schema.rs` (static message tables) from upstream Go API types.

The Go struct tags in k8s.io/api and k8s.io/apimachinery are the single source
of truth for both wire formats: `protobuf:"bytes,3,opt,name=clusterIP"` gives
the field number, `json:"clusterIP,omitempty"` the JSON name and omission rule,
and the Go type (pointer or not, slice, map, well-known type) the shape.

Usage (git checkouts of kubernetes/api, apimachinery, apiextensions-apiserver
and kube-aggregator, or those modules' folders in the Go module cache, which
`go mod download -json k8s.io/api@v0.37.2` prints as Dir; from the crate's
folder):

    python3 tools/gen_schema.py --api /path/to/kubernetes/api \
        --apimachinery /path/to/kubernetes/apimachinery \
        --apiextensions /path/to/kubernetes/apiextensions-apiserver \
        --aggregator /path/to/kubernetes/kube-aggregator --tag v0.33.13 \
        --kinds ../../docs/research/builtin-kinds/default-resources.tsv \
        > src/schema.rs

(`src/schema.rs` is `#[rustfmt::skip]`, so the output is committed as is.)

`--check-k8s-pb DIR` additionally cross-checks every field number against the
prost structs of the k8s-pb crate (DIR = its `src`), and `--fields-only` prints
`Message.jsonName` lines instead of Rust (used to list fields newer than the
Kubernetes version k8s-openapi is built for in the tests).
"""
import argparse
import os
import re
import subprocess
import sys

API = "k8s.io/api/"
AM = "k8s.io/apimachinery/"
AE = "k8s.io/apiextensions-apiserver/"
AG = "k8s.io/kube-aggregator/"
AE_V1 = AE + "pkg/apis/apiextensions/v1"

# Types with a hand-written wire/JSON mapping in src/decode.rs.
WELL_KNOWN = {
    AM + "pkg/apis/meta/v1.Time": "Time",
    AM + "pkg/apis/meta/v1.MicroTime": "MicroTime",
    AM + "pkg/apis/meta/v1.Duration": "Duration",
    AM + "pkg/apis/meta/v1.FieldsV1": "FieldsV1",
    AM + "pkg/util/intstr.IntOrString": "IntOrString",
    AM + "pkg/api/resource.Quantity": "Quantity",
    AM + "pkg/runtime.RawExtension": "RawExtension",
    AE_V1 + ".JSON": "Json",
}
# apiextensions' schema unions with their own JSON forms: kind name in
# src/table.rs, whose message is JSONSchemaProps.
SCHEMA_UNIONS = {
    AE_V1 + ".JSONSchemaPropsOrBool": "SchemaOrBool",
    AE_V1 + ".JSONSchemaPropsOrArray": "SchemaOrArray",
    AE_V1 + ".JSONSchemaPropsOrStringArray": "SchemaOrStringArray",
}
STRING_PKGS = {AM + "pkg/types"}  # types.UID, types.NodeName, ...

# The kinds: every kind of a default server's discovery (--kinds, the TSV of
# docs/research/builtin-kinds/default-resources.tsv) and its List, plus the
# kinds only subresources and errors use. (apiVersion, kind, package).
EXTRA_ROOTS = [
    ("v1", "Status", AM + "pkg/apis/meta/v1"),
    ("autoscaling/v1", "Scale", API + "autoscaling/v1"),
    ("policy/v1", "Eviction", API + "policy/v1"),
    ("authentication.k8s.io/v1", "TokenRequest", API + "authentication/v1"),
]
# Groups whose Go package is not named after the group's first label.
GROUP_PACKAGES = {
    "core": API + "core",
    "rbac.authorization.k8s.io": API + "rbac",
    "flowcontrol.apiserver.k8s.io": API + "flowcontrol",
    "internal.apiserver.k8s.io": API + "apiserverinternal",
    "apiextensions.k8s.io": AE + "pkg/apis/apiextensions",
    "apiregistration.k8s.io": AG + "pkg/apis/apiregistration",
}


def kinds_of(path):
    """(apiVersion, kind, package) of every row of the discovery TSV."""
    rows = []
    with open(path) as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            row = dict(zip(header, line.rstrip("\n").split("\t")))
            group, version, kind = row["group"], row["version"], row["kind"]
            pkg = GROUP_PACKAGES.get(group, API + group.split(".")[0]) + "/" + version
            api_version = version if group == "core" else f"{group}/{version}"
            if (api_version, kind, pkg) not in rows:
                rows.append((api_version, kind, pkg))
    return rows


# Sent with the apiVersion of whatever group the request targets.
ANY_VERSION_ROOTS = [("DeleteOptions", AM + "pkg/apis/meta/v1")]

# Directory of each known Go package inside its repository.
def pkg_location(pkg):
    if pkg.startswith(API):
        return "api", pkg[len(API):]
    if pkg.startswith(AM):
        return "apimachinery", pkg[len(AM):]
    if pkg.startswith(AE):
        return "apiextensions", pkg[len(AE):]
    if pkg.startswith(AG):
        return "aggregator", pkg[len(AG):]
    raise SystemExit(f"unknown package {pkg}")


class Repo:
    """A git checkout read at a tag, or (when `path` is a module's folder in
    the Go module cache, e.g. `go mod download -json k8s.io/api@v0.37.2`'s
    Dir) the module's files as the proxy serves them."""

    def __init__(self, path, tag):
        self.path, self.tag = path, tag
        self.is_git = os.path.isdir(os.path.join(path, ".git")) or path.endswith("/repo")
        if self.is_git:
            self.commit = git(path, "rev-parse", tag + "^{commit}").strip()
        else:
            self.commit = "Go module proxy"

    def go_files(self, d):
        if not self.is_git:
            folder = os.path.join(self.path, d)
            for base in sorted(os.listdir(folder)):
                if not base.endswith(".go") or base.endswith("_test.go"):
                    continue
                if base.startswith(("generated", "zz_generated")) or "swagger_doc" in base:
                    continue
                with open(os.path.join(folder, base)) as f:
                    yield f"{d}/{base}", f.read()
            return
        names = git(self.path, "ls-tree", "--name-only", self.tag, d + "/").split()
        for n in names:
            base = n.rsplit("/", 1)[-1]
            if not base.endswith(".go") or base.endswith("_test.go"):
                continue
            if base.startswith(("generated", "zz_generated")) or "swagger_doc" in base:
                continue
            yield n, git(self.path, "show", f"{self.tag}:{n}")


def git(path, *args):
    return subprocess.run(["git", "-C", path, *args], check=True, capture_output=True,
                          text=True).stdout


class Package:
    """Type declarations of one Go package (just enough Go to read API types)."""

    def __init__(self, path, repo):
        self.path = path
        self.types = {}  # name -> ("struct", fields, imports) | ("alias", typeexpr, imports)
        _, d = pkg_location(path)
        for _name, src in repo.go_files(d):
            imports = parse_imports(src)
            self._parse(src, imports)

    def _parse(self, src, imports):
        src = re.sub(r"/\*.*?\*/", "", src, flags=re.S)
        lines = src.split("\n")
        i = 0
        in_group = False
        while i < len(lines):
            line = lines[i]
            if line.startswith("type ("):
                in_group = True
                i += 1
                continue
            if in_group and line.startswith(")"):
                in_group = False
                i += 1
                continue
            m = re.match(r"^type (\w+) struct\s*\{\s*\}", line)
            if m:  # an empty struct on one line
                self.types[m.group(1)] = ("struct", [], imports)
                i += 1
                continue
            m = re.match(r"^type (\w+)(?:\[[^\]]*\])? struct \{\s*$", line) or (
                in_group and re.match(r"^\t(\w+) struct \{\s*$", line))
            if m:
                body = []
                close = "}" if not in_group else "\t}"
                i += 1
                while not (lines[i] == close or lines[i].startswith(close + " ")):
                    body.append(lines[i])
                    i += 1
                self.types[m.group(1)] = ("struct", parse_fields(body), imports)
                i += 1
                continue
            m = re.match(r"^type (\w+) =? ?([\w.\[\]*]+)\s*(//.*)?$", line) or (
                in_group and re.match(r"^\t(\w+) =? ?([\w.\[\]*]+)\s*(//.*)?$", line))
            if m and m.group(2) not in ("interface", "func"):
                self.types.setdefault(m.group(1), ("alias", m.group(2), imports))
            i += 1


def parse_imports(src):
    imports = {}
    block = re.search(r"^import \((.*?)^\)", src, re.S | re.M)
    specs = block.group(1).split("\n") if block else []
    specs += [m.group(1) for m in re.finditer(r'^import (.*)$', src, re.M) if "(" not in m.group(1)]
    for spec in specs:
        m = re.match(r'\s*(\w+)?\s*"([^"]+)"', spec)
        if m:
            path = m.group(2)
            alias = m.group(1) or path.rsplit("/", 1)[-1]
            imports[alias] = path
    return imports


def parse_fields(body):
    fields = []
    for raw in body:
        if raw.strip().startswith("//"):
            continue
        line = raw.split("//", 1)[0] if "`" not in raw else raw
        if "`" in line:
            pre, tag, _ = line.split("`", 2)
        else:
            pre, tag = line, ""
        pre = pre.strip()
        if not pre:
            continue
        parts = pre.split()
        if len(parts) == 1:
            name, ty = None, parts[0]
        elif len(parts) == 2:
            name, ty = parts
        else:
            raise SystemExit(f"cannot parse field line: {raw!r}")
        tags = dict(re.findall(r'(\w+):"([^"]*)"', tag))
        fields.append((name, ty, tags))
    return fields


class Gen:
    def __init__(self, repos):
        self.repos = repos
        self.pkgs = {}
        self.messages = {}  # key "pkg.Type" -> list of field tuples (or None while building)
        self.order = []
        self.wrappers = {}

    def pkg(self, path):
        if path not in self.pkgs:
            where, _ = pkg_location(path)
            self.pkgs[path] = Package(path, self.repos[where])
        return self.pkgs[path]

    def lookup(self, pkg, name):
        p = self.pkg(pkg)
        if name not in p.types:
            raise SystemExit(f"type {pkg}.{name} not found")
        return p.types[name]

    def resolve_name(self, pkg, imports, ty):
        """'metav1.Time' -> (pkg path, 'Time')"""
        if "." in ty:
            alias, name = ty.split(".", 1)
            return imports[alias], name
        return pkg, ty

    def kind_of(self, pkg, imports, ty, ctx):
        """Kind expression for a non-slice, non-map Go type."""
        if ty in ("string",):
            return "Str"
        if ty == "bool":
            return "Bool"
        if ty in ("int32", "int", "int16", "int8"):
            return "Int32"
        if ty == "int64":
            return "Int64"
        if ty in ("uint32", "uint16", "uint8"):
            return "Uint32"
        if ty == "uint64":
            return "Uint64"
        if ty == "float64":
            return "Double"
        if ty == "float32":
            return "Float"
        tp, name = self.resolve_name(pkg, imports, ty)
        full = f"{tp}.{name}"
        if full in WELL_KNOWN:
            return WELL_KNOWN[full]
        if full in SCHEMA_UNIONS:
            return f"{SCHEMA_UNIONS[full]}(&{self.message(AE_V1, 'JSONSchemaProps')})"
        if tp in STRING_PKGS:
            return "Str"
        decl = self.lookup(tp, name)
        if decl[0] == "struct":
            return f"Msg(&{self.message(tp, name)})"
        target = decl[1]
        if target.startswith("[]") and target != "[]byte":
            # A named slice that is not itself a field's repeated type: go-to-protobuf
            # wraps it in a message whose field 1 ("items") holds the elements.
            return f"List(&{self.wrapper(tp, name, decl)})"
        if target.startswith("map[") or target.startswith("*"):
            raise SystemExit(f"unsupported named type {full} = {target} ({ctx})")
        return self.kind_of(tp, decl[2], target, ctx)

    def underlying(self, pkg, imports, ty):
        """Follow named types to slice/map shapes: returns (pkg, imports, expr)."""
        while not (ty.startswith("[]") or ty.startswith("map[")):
            if ty in ("string", "bool", "int32", "int64", "int", "float64", "float32",
                      "uint32", "uint64", "byte") or "." in ty and f"{self.resolve_name(pkg, imports, ty)[0]}" in STRING_PKGS:
                return pkg, imports, ty
            tp, name = self.resolve_name(pkg, imports, ty)
            if f"{tp}.{name}" in WELL_KNOWN or f"{tp}.{name}" in SCHEMA_UNIONS:
                return pkg, imports, ty
            decl = self.lookup(tp, name)
            if decl[0] == "struct":
                return pkg, imports, ty
            pkg, imports, ty = tp, decl[2], decl[1]
        return pkg, imports, ty

    def wrapper(self, pkg, name, decl):
        ident = ident_for(pkg, name)
        if ident not in self.wrappers:
            elem = decl[1][2:]
            self.wrappers[ident] = None
            kind = self.kind_of(pkg, decl[2], elem, name)
            self.wrappers[ident] = (f"{short(pkg)}.{name}", [(1, "items", kind, "Repeated", "Always")])
            self.order.append(ident)
        return ident

    def message(self, pkg, name):
        ident = ident_for(pkg, name)
        if ident in self.messages:
            return ident
        self.messages[ident] = None
        _, fields, imports = self.lookup(pkg, name)
        out = []
        for fname, ty, tags in fields:
            pb = tags.get("protobuf")
            js = tags.get("json")
            if pb is None:
                if js is not None and js.split(",")[0] == "-":
                    continue
                if fname is None and ty.endswith("TypeMeta"):
                    continue  # apiVersion/kind live in the runtime.Unknown envelope
                if js is None or js.split(",")[0] == "-":
                    continue
                print(f"warning: {pkg}.{name}.{fname} has no protobuf tag, skipped", file=sys.stderr)
                continue
            pbparts = pb.split(",")
            number = int(pbparts[1])
            jparts = (js or "").split(",")
            jname = jparts[0]
            if jname == "-":
                continue
            opts = set(jparts[1:])
            pointer = ty.startswith("*")
            bare = ty.lstrip("*")
            ctx = f"{pkg}.{name}.{fname}"
            if fname is None and (jname == "" or "inline" in opts):
                kind = self.kind_of(pkg, imports, bare, ctx)
                out.append((number, "", kind, "Inline", "Always"))
                continue
            if jname == "":
                jname = fname
            upkg, uimports, uty = self.underlying(pkg, imports, bare)
            if uty == "[]byte":
                kind, card = "Bytes", "One"
            elif uty.startswith("[]"):
                elem = uty[2:]
                if elem.startswith("*"):
                    elem = elem[1:]
                upkg2, uimp2, uelem = self.underlying(upkg, uimports, elem)
                if uelem.startswith("[]") and uelem != "[]byte":
                    # [][]T: each element is a wrapped list
                    raise SystemExit(f"unsupported nested slice at {ctx}")
                kind = "Bytes" if uelem == "[]byte" else self.kind_of(upkg, uimports, elem, ctx)
                card = "Repeated"
            elif uty.startswith("map["):
                m = re.match(r"map\[([\w.*]+)\](.+)$", uty)
                key, val = m.group(1), m.group(2)
                kp, ki, kty = self.underlying(upkg, uimports, key)
                if self.kind_of(upkg, uimports, key, ctx) != "Str":
                    raise SystemExit(f"non-string map key at {ctx}")
                vp, vi, vty = self.underlying(upkg, uimports, val)
                if vty == "[]byte":
                    kind = "Bytes"
                elif vty.startswith("[]"):
                    # map[string]NamedSlice: values are wrapped lists
                    vp2, vn = self.resolve_name(upkg, uimports, val)
                    kind = f"List(&{self.wrapper(vp2, vn, self.lookup(vp2, vn))})"
                else:
                    kind = self.kind_of(upkg, uimports, val, ctx)
                card = "Map"
            else:
                kind, card = self.kind_of(pkg, imports, bare, ctx), "One"
            if card != "One":
                emit = "Always"
            elif pointer:
                emit = "Always"
            elif "omitzero" in opts:
                emit = "OmitZero"
            elif "omitempty" in opts:
                emit = "OmitEmpty"
            else:
                emit = "Always"
            out.append((number, jname, kind, card, emit))
        out.sort()
        nums = [f[0] for f in out]
        if len(nums) != len(set(nums)):
            raise SystemExit(f"duplicate field numbers in {pkg}.{name}")
        self.messages[ident] = (f"{short(pkg)}.{name}", out)
        self.order.append(ident)
        return ident


def short(pkg):
    for prefix in (API, AM + "pkg/apis/", AM + "pkg/", AE + "pkg/apis/", AG + "pkg/apis/"):
        if pkg.startswith(prefix):
            return pkg[len(prefix):]
    return pkg


def ident_for(pkg, name):
    p = re.sub(r"[^A-Za-z0-9]", "_", short(pkg)).upper()
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).upper()
    return f"{p}_{snake}"


def check_k8s_pb(gen, pbdir):
    """Cross-check numbers and wire types against k8s-pb's prost structs."""
    problems = 0
    cache = {}
    for ident in gen.order:
        table = gen.messages.get(ident) or gen.wrappers.get(ident)
        full, fields = table
        pkgdir, name = full.rsplit(".", 1)
        if pkgdir.startswith("meta/") or pkgdir in ("runtime",):
            path = f"{pbdir}/apimachinery/pkg/apis/{pkgdir}/mod.rs"
        else:
            path = f"{pbdir}/api/{pkgdir}/mod.rs"
        if path not in cache:
            try:
                cache[path] = open(path).read()
            except FileNotFoundError:
                cache[path] = ""
        m = re.search(r"pub struct " + name + r" \{(.*?)\n\}", cache[path], re.S | re.I)
        if not m:
            print(f"k8s-pb: no struct {full}", file=sys.stderr)
            continue
        pb = {}
        for f in re.finditer(r"#\[prost\((.*?)\)\]\s*pub (?:r#)?(\w+):", m.group(1), re.S):
            attr = " ".join(f.group(1).split())
            tag = int(re.search(r'tag = "(\d+)"', attr).group(1))
            pb[tag] = attr
        for number, jname, kind, card, _ in fields:
            attr = pb.pop(number, None)
            if attr is None:
                print(f"k8s-pb: {full}.{jname} #{number} missing (newer field?)", file=sys.stderr)
                continue
            want = {"Str": "string", "Bytes": "bytes", "Bool": "bool", "Int32": "int32",
                    "Int64": "int64", "Double": "double"}.get(kind, "message")
            if card == "Map":
                ok = attr.startswith("btree_map") and attr.split('"')[1].split(", ")[1] == want
            else:
                ok = attr.startswith(want) and (("repeated" in attr) == (card == "Repeated"))
            if not ok:
                problems += 1
                print(f"k8s-pb MISMATCH {full}.{jname} #{number}: ours {kind}/{card}, prost {attr}",
                      file=sys.stderr)
        for number, attr in pb.items():
            print(f"k8s-pb: {full} #{number} ({attr}) not in our table", file=sys.stderr)
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--api", required=True)
    ap.add_argument("--apimachinery", required=True)
    ap.add_argument("--apiextensions", required=True)
    ap.add_argument("--aggregator", required=True)
    ap.add_argument("--tag", required=True)
    ap.add_argument("--aggregator-tag", help="kube-aggregator's tag when it lacks --tag")
    ap.add_argument("--kinds", required=True, help="docs/research/builtin-kinds/default-resources.tsv")
    ap.add_argument("--check-k8s-pb")
    ap.add_argument("--fields-only", action="store_true")
    args = ap.parse_args()
    repos = {
        "api": Repo(args.api, args.tag),
        "apimachinery": Repo(args.apimachinery, args.tag),
        "apiextensions": Repo(args.apiextensions, args.tag),
        "aggregator": Repo(args.aggregator, args.aggregator_tag or args.tag),
    }
    gen = Gen(repos)
    roots = []
    for av, k, p in kinds_of(args.kinds) + EXTRA_ROOTS:
        roots.append((av, k, gen.message(p, k)))
        # Its List, where the package has one (subresource kinds have none).
        if k + "List" in gen.pkg(p).types:
            roots.append((av, k + "List", gen.message(p, k + "List")))
    any_roots = [(k, gen.message(p, k)) for k, p in ANY_VERSION_ROOTS]
    if args.check_k8s_pb:
        if check_k8s_pb(gen, args.check_k8s_pb):
            raise SystemExit("k8s-pb cross-check failed")
    if args.fields_only:
        for ident in gen.order:
            full, fields = gen.messages.get(ident) or gen.wrappers.get(ident)
            for f in fields:
                print(f"{full}.{f[1]}")
        return
    w = sys.stdout.write
    w("//! Protobuf field numbers and types of the served kinds, generated from the Go\n")
    w("//! struct tags (see the header below).\n\n")
    w("// @generated by tools/gen_schema.py from the Go struct tags of\n")
    w(f"// k8s.io/api {args.tag} ({repos['api'].commit}),\n")
    w(f"// k8s.io/apimachinery {args.tag} ({repos['apimachinery'].commit}),\n")
    w(f"// k8s.io/apiextensions-apiserver {args.tag} ({repos['apiextensions'].commit}) and\n")
    w(f"// k8s.io/kube-aggregator {repos['aggregator'].tag} ({repos['aggregator'].commit}).\n")
    w("// Do not edit by hand; re-run the generator instead.\n\n")
    w("use crate::table::{Card::*, Emit::*, Kind::*, Message, f};\n\n")
    for ident in gen.order:
        full, fields = gen.messages.get(ident) or gen.wrappers.get(ident)
        w(f"pub(crate) static {ident}: Message = Message {{\n    name: \"{full}\",\n    fields: &[\n")
        for number, jname, kind, card, emit in fields:
            w(f"        f({number}, \"{jname}\", {kind}, {card}, {emit}),\n")
        w("    ],\n};\n\n")
    w("/// Top-level kinds: `(apiVersion, kind, message)`.\n")
    w("pub(crate) static ROOTS: &[(&str, &str, &Message)] = &[\n")
    for av, k, ident in roots:
        w(f"    (\"{av}\", \"{k}\", &{ident}),\n")
    w("];\n\n")
    w("/// Kinds that every API group registers (accepted with any apiVersion).\n")
    w("pub(crate) static ANY_VERSION_ROOTS: &[(&str, &Message)] = &[\n")
    for k, ident in any_roots:
        w(f"    (\"{k}\", &{ident}),\n")
    w("];\n")


if __name__ == "__main__":
    main()
