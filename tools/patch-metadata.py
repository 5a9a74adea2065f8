#!/usr/bin/env python3
"""Writes crates/patch/data/builtin-patch-metadata.json from upstream's
api/openapi-spec/swagger.json (k8s.io/kubernetes at the release kubext
serves, e.g. from the Go module cache):

    tools/patch-metadata.py ~/go/pkg/mod/k8s.io/kubernetes@v1.37.2 v1.37.2 \
        > crates/patch/data/builtin-patch-metadata.json

For each definition: the properties carrying x-kubernetes-* extensions or a
$ref / items / additionalProperties reference to another definition (what a
strategic-merge walker follows), '_type' with the definition's own
x-kubernetes-* extensions, and '_kinds' from group/version/Kind to the
definition's name.
"""
import json
import sys

EXTENSIONS = (
    "x-kubernetes-patch-strategy",
    "x-kubernetes-patch-merge-key",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
)
REF = "#/definitions/"


def reference(schema):
    ref = schema.get("$ref", "")
    return ref[len(REF):] if ref.startswith(REF) else None


def property_entry(prop):
    entry = {}
    if reference(prop):
        entry["$ref"] = reference(prop)
    for key in ("items", "additionalProperties"):
        inner = prop.get(key)
        if isinstance(inner, dict) and reference(inner):
            entry[key] = reference(inner)
    for ext in EXTENSIONS:
        if ext in prop:
            entry[ext] = prop[ext]
    return entry


def main(module_dir, version):
    with open(f"{module_dir}/api/openapi-spec/swagger.json") as f:
        swagger = json.load(f)
    definitions, kinds = {}, {}
    for name, schema in swagger["definitions"].items():
        entry = {}
        own = {
            key: value
            for key, value in schema.items()
            if key.startswith("x-kubernetes-") and key != "x-kubernetes-group-version-kind"
        }
        if own:
            entry["_type"] = own
        props = {}
        for prop_name, prop in schema.get("properties", {}).items():
            p = property_entry(prop)
            if p:
                props[prop_name] = p
        if props:
            entry["properties"] = props
        if entry:
            definitions[name] = entry
        gvks = schema.get("x-kubernetes-group-version-kind", [])
        # DeleteOptions and WatchEvent name every group-version: not kinds of one.
        for gvk in gvks if len(gvks) == 1 else []:
            group = gvk["group"] or "core"
            kinds[f"{group}/{gvk['version']}/{gvk['kind']}"] = name
    document = {
        "_kinds": dict(sorted(kinds.items())),
        "_source": (
            f"Derived from api/openapi-spec/swagger.json of k8s.io/kubernetes {version} "
            "by tools/patch-metadata.py. For each definition: properties carrying "
            "x-kubernetes-* extensions and/or a $ref / items / additionalProperties "
            "reference to another definition (so a strategic-merge-patch walker can "
            "traverse). '_type' holds type-level x-kubernetes-* (e.g. "
            "x-kubernetes-map-type). '_kinds' maps group/version/Kind to its definition "
            "name. Generated with all alpha/beta API versions enabled (api/all=true)."
        ),
        "definitions": dict(sorted(definitions.items())),
    }
    json.dump(document, sys.stdout, separators=(",", ":"))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
