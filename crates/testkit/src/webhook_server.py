#!/usr/bin/env python3
"""An admission and conversion webhook server for kubext's black-box tests,
after upstream's e2e webhooks (agnhost `webhook` and `crd-conversion-webhook`):
HTTPS only, answers in the review version it was sent, copies `request.uid`,
refuses bodies that are not `application/json`. Every request it receives is
appended to `<record-dir>/requests.jsonl` (one review per line).

Usage: webhook_server.py CERT KEY RECORD_DIR; prints `port <n>` when ready.
"""

import base64
import json
import os
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CERT, KEY, RECORD_DIR = sys.argv[1], sys.argv[2], sys.argv[3]
RECORD_LOCK = threading.Lock()


def allow():
    return {"allowed": True}


def deny(message, code=None, reason=None):
    status = {"message": message}
    if code is not None:
        status["code"] = code
    if reason is not None:
        status["reason"] = reason
    return {"allowed": False, "status": status}


def patch(ops):
    return {
        "allowed": True,
        "patchType": "JSONPatch",
        "patch": base64.b64encode(json.dumps(ops).encode()).decode(),
    }


def data_of(request, field="object"):
    obj = request.get(field) or {}
    return obj.get("data") or {}


def configmaps(request):
    if data_of(request).get("webhook-e2e-test") == "webhook-disallow":
        return deny("the configmap contains unwanted key and value")
    return allow()


def mutating_configmaps(request):
    data = data_of(request)
    if data.get("mutation-start") != "yes":
        return allow()
    if "mutation-stage-1" not in data:
        return patch([{"op": "add", "path": "/data/mutation-stage-1", "value": "yes"}])
    return patch([{"op": "add", "path": "/data/mutation-stage-2", "value": "yes"}])


def custom_resource(request):
    if request["operation"] == "DELETE":
        if data_of(request, "oldObject").get("webhook-e2e-test") == "webhook-nondeletable":
            return deny("the custom resource cannot be deleted because it contains unwanted key and value")
        return allow()
    if data_of(request).get("webhook-e2e-test") == "webhook-disallow":
        return deny("the custom resource contains unwanted data")
    return allow()


def add_label(request):
    labels = ((request.get("object") or {}).get("metadata") or {}).get("labels")
    if labels is None:
        return patch([{"op": "add", "path": "/metadata/labels", "value": {"added-label": "yes"}}])
    return patch([{"op": "add", "path": "/metadata/labels/added-label", "value": "yes"}])


def count_calls(request):
    """Counts its own calls in an annotation (reinvocation tests)."""
    meta = (request.get("object") or {}).get("metadata") or {}
    annotations = meta.get("annotations")
    calls = int((annotations or {}).get("calls", "0")) + 1
    if annotations is None:
        return patch([{"op": "add", "path": "/metadata/annotations", "value": {"calls": str(calls)}}])
    return patch([{"op": "add", "path": "/metadata/annotations/calls", "value": str(calls)}])


def warn(request):
    response = allow()
    response["warnings"] = ["this object is watched", "this object is watched", "second warning"]
    response["auditAnnotations"] = {"checked": "yes"}
    return response


def delayed(seconds):
    def handler(request):
        time.sleep(seconds)
        return allow()
    return handler


def status_deny(request):
    return deny("go away", code=403, reason="Forbidden")


def convert(obj, to_version):
    """agnhost's converter: v1 `hostPort: "h:p"` <-> v2 `host: h, port: p`."""
    converted = json.loads(json.dumps(obj))
    from_version = obj["apiVersion"].split("/")[-1]
    to = to_version.split("/")[-1]
    if from_version == "v1" and to == "v2" and "hostPort" in converted:
        host, port = converted.pop("hostPort").split(":")
        converted["host"], converted["port"] = host, port
    elif from_version == "v2" and to == "v1" and "host" in converted:
        converted["hostPort"] = f'{converted.pop("host")}:{converted.pop("port")}'
    converted["apiVersion"] = to_version
    return converted


def conversion(path, request):
    """The ConversionReview response for `path`'s behaviour."""
    desired = request["desiredAPIVersion"]
    objects = [convert(o, desired) for o in request.get("objects") or []]
    result = {"status": "Success"}
    if path == "/convert-fail":
        result = {"status": "Failure", "message": "custom webhook conversion error"}
    elif path == "/convert-none":
        objects = []
    elif path == "/convert-uid":
        for o in objects:
            o["metadata"]["uid"] = "changed"
    elif path == "/convert-metadata":
        for o in objects:
            meta = o["metadata"]
            meta.setdefault("labels", {})["converted"] = "yes"
            meta["finalizers"] = ["foo"]
            meta["generation"] = 42
            meta["garbage"] = "yes"
    return {"uid": request.get("uid"), "convertedObjects": objects, "result": result}


ROUTES = {
    "/always-allow": lambda r: allow(),
    "/wrong-uid": lambda r: allow(),
    "/always-allow-delay-5s": delayed(5),
    "/always-deny": lambda r: deny("this webhook denies all requests"),
    "/deny-forbidden": status_deny,
    "/configmaps": configmaps,
    "/mutating-configmaps": mutating_configmaps,
    "/custom-resource": custom_resource,
    "/mutating-custom-resource": mutating_configmaps,
    "/add-label": add_label,
    "/count-calls": count_calls,
    "/warn": warn,
}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out as separate writes: without this, Nagle and
    # the client's delayed ACK hold every answer back 40 ms.
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def answer(self, code, body):
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def setup(self):
        super().setup()
        with RECORD_LOCK:
            with open(os.path.join(RECORD_DIR, "connections"), "a") as f:
                f.write("1\n")

    def do_GET(self):
        self.answer(200, {"ok": True})

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        if self.headers.get("Content-Type") != "application/json":
            self.answer(415, None)
            return
        review = json.loads(body)
        path, _, query = self.path.partition("?")
        with RECORD_LOCK:
            with open(os.path.join(RECORD_DIR, "requests.jsonl"), "a") as f:
                f.write(json.dumps({"path": path, "query": query, "review": review}) + "\n")
        request = review.get("request") or {}
        if path == "/not-json":
            data = b"not json"
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        if path == "/server-error":
            self.answer(500, None)
            return
        if path == "/convert-http-error":
            self.answer(400, None)
            return
        if review.get("kind") == "ConversionReview":
            response = conversion(path, request)
            self.answer(200, {"apiVersion": review.get("apiVersion"), "kind": "ConversionReview", "response": response})
            return
        route = ROUTES.get(path)
        if route is None:
            self.answer(404, None)
            return
        response = route(request)
        response["uid"] = "wrong" if path == "/wrong-uid" else request.get("uid")
        self.answer(200, {"apiVersion": review.get("apiVersion"), "kind": "AdmissionReview", "response": response})


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(CERT, KEY)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
