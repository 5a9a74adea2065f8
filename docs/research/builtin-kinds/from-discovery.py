#!/usr/bin/env python3
"""Writes a default server's resources as `default-resources.tsv` lists them,
from a running kube-apiserver's discovery (aggregated v2 for names, scope,
verbs, short names, categories and subresources; the legacy documents for
storage version hashes).

    python3 from-discovery.py https://127.0.0.1:6443 TOKEN [--serves KUBEXT_TSV] > out.tsv

Run it against kube-apiserver started with default flags (scripts/upstream
builds one) so that only what is on by default is listed. `--serves` copies
the `kubext_serves` column from an earlier TSV for the rows both have.
"""
import argparse
import json
import ssl
import sys
import urllib.request

ALL_VERBS = {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
COLUMNS = ["group", "version", "resource", "singular", "kind", "scope", "shortNames",
           "categories", "verbs", "subresources", "storageVersionHash", "kubext_serves"]


def get(server, token, path, accept="application/json"):
    req = urllib.request.Request(server + path, headers={"Authorization": f"Bearer {token}", "Accept": accept})
    with urllib.request.urlopen(req, context=ssl._create_unverified_context()) as resp:
        return json.load(resp)


def verbs_of(verbs):
    return "all 8" if set(verbs) == ALL_VERBS else ",".join(sorted(verbs))


def subresources_of(group, version, subs):
    parts = []
    for sub in sorted(subs, key=lambda s: s["subresource"]):
        kind = sub.get("responseKind", {})
        where = ""
        if kind.get("group") or kind.get("version"):
            sub_group, sub_version = kind.get("group", ""), kind.get("version", "")
            if (sub_group or "core", sub_version) != (group, version):
                where = f"{sub_group}/{sub_version} " if sub_group else f"{sub_version} "
        parts.append(f"{sub['subresource']} → {where}{kind.get('kind', '')} [{','.join(sorted(sub.get('verbs', [])))}]")
    return "; ".join(parts)


def rows(server, token):
    out = []
    for root in ("/api", "/apis"):
        for item in get(server, token, root, AGGREGATED)["items"]:
            group = item["metadata"].get("name") or "core"
            for version in item["versions"]:
                v = version["version"]
                legacy = get(server, token, f"/api/{v}" if group == "core" else f"/apis/{group}/{v}")
                hashes = {r["name"]: r.get("storageVersionHash", "") for r in legacy["resources"]}
                for r in version.get("resources", []):
                    out.append({
                        "group": group, "version": v, "resource": r["resource"],
                        "singular": r.get("singularResource", ""),
                        "kind": r.get("responseKind", {}).get("kind", ""),
                        "scope": "ns" if r.get("scope") == "Namespaced" else "cluster",
                        "shortNames": ",".join(r.get("shortNames", [])),
                        "categories": ",".join(r.get("categories", [])),
                        "verbs": verbs_of(r.get("verbs", [])),
                        "subresources": subresources_of(group, v, r.get("subresources", [])),
                        "storageVersionHash": hashes.get(r["resource"], ""),
                        "kubext_serves": "",
                    })
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("server")
    ap.add_argument("token")
    ap.add_argument("--serves", help="an earlier TSV whose kubext_serves column to keep")
    args = ap.parse_args()
    serves = {}
    if args.serves:
        with open(args.serves) as f:
            header = f.readline().rstrip("\n").split("\t")
            for line in f:
                row = dict(zip(header, line.rstrip("\n").split("\t")))
                serves[(row["group"], row["version"], row["resource"])] = row.get("kubext_serves", "")
    print("\t".join(COLUMNS))
    for row in rows(args.server, args.token):
        row["kubext_serves"] = serves.get((row["group"], row["version"], row["resource"]), "")
        print("\t".join(row[c] for c in COLUMNS))


if __name__ == "__main__":
    sys.exit(main())
