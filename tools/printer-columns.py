#!/usr/bin/env python3
"""Writes crates/registry/data/printer-columns.json from a running
kube-apiserver (the release kubext serves):

    tools/printer-columns.py https://127.0.0.1:16443 admintoken \
        > crates/registry/data/printer-columns.json

For every resource in the server's discovery (/api and /apis; no
subresources) whose verbs include list: the `columnDefinitions` of
`GET <collection>?limit=1` with
`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`, keyed by group
("" for the core group), then resource. Versions of one resource must print
the same columns; the tool fails if they do not. Run it against a bare
kube-apiserver (no CRDs or aggregated APIs: those are not built-in).
"""
import json
import ssl
import sys
import urllib.request

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
FIELDS = ("name", "type", "format", "description", "priority")


def get(base, token, path, accept="application/json"):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    req = urllib.request.Request(
        base + path,
        headers={"Authorization": "Bearer " + token, "Accept": accept},
    )
    with urllib.request.urlopen(req, context=ctx) as resp:
        return json.load(resp)


def group_versions(base, token):
    for version in get(base, token, "/api")["versions"]:
        yield "", "/api/" + version
    for group in get(base, token, "/apis")["groups"]:
        for version in group["versions"]:
            yield group["name"], "/apis/" + version["groupVersion"]


def main():
    base, token = sys.argv[1].rstrip("/"), sys.argv[2]
    out = {}
    for group, prefix in group_versions(base, token):
        for res in get(base, token, prefix)["resources"]:
            if "/" in res["name"] or "list" not in res.get("verbs", []):
                continue
            table = get(base, token, f"{prefix}/{res['name']}?limit=1", TABLE)
            columns = [
                {k: c.get(k, 0 if k == "priority" else "") for k in FIELDS}
                for c in table["columnDefinitions"]
            ]
            known = out.setdefault(group, {}).setdefault(res["name"], columns)
            if known != columns:
                sys.exit(f"{prefix}/{res['name']}: columns differ between versions")
    json.dump(out, sys.stdout, indent=1, sort_keys=True, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
