# SPDX-License-Identifier: MIT
"""The API server's REST interface, for what kubectl is too slow for on 2 cores: test 5 makes and
reads thousands of objects, and one kubectl run costs about as much CPU as a hundred requests.
Connections are kept open, one per thread; creates go out on a few threads at once.
"""
import http.client
import json
import ssl
import threading
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

# The collection of each kind the tests write, by (apiVersion, kind).
COLLECTIONS = {
    ("v1", "Pod"): "/api/v1/namespaces/{ns}/pods",
    ("v1", "Node"): "/api/v1/nodes",
    ("v1", "Namespace"): "/api/v1/namespaces",
    ("resource.k8s.io/v1", "ResourceClaim"): "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims",
    ("resource.k8s.io/v1", "ResourceSlice"): "/apis/resource.k8s.io/v1/resourceslices",
    ("resource.k8s.io/v1", "DeviceClass"): "/apis/resource.k8s.io/v1/deviceclasses",
}


class ApiError(AssertionError):
    pass


class Api:
    def __init__(self, server, token):
        url = urllib.parse.urlsplit(server)
        self.host, self.port = url.hostname, url.port
        self.headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        self.ctx = ssl.create_default_context()
        self.ctx.check_hostname, self.ctx.verify_mode = False, ssl.CERT_NONE
        self.local = threading.local()

    def _conn(self):
        if getattr(self.local, "conn", None) is None:
            self.local.conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=120)
        return self.local.conn

    def request(self, method, path, body=None, ok=(200, 201, 202), content_type="application/json"):
        """(status, decoded answer, its size in bytes); an answer not in ok raises, naming the request."""
        data = None if body is None else json.dumps(body).encode()
        headers = dict(self.headers, **{"Content-Type": content_type})
        for attempt in (0, 1):
            conn = self._conn()
            try:
                conn.request(method, path, body=data, headers=headers)
                res = conn.getresponse()
                raw = res.read()
                break
            except (http.client.HTTPException, OSError):
                # A kept connection the server closed: once more on a new one.
                conn.close()
                self.local.conn = None
                if attempt:
                    raise
        text = raw.decode(errors="replace")
        if ok and res.status not in ok:
            raise ApiError(f"{method} {path}: {res.status} {text[:500]}")
        return res.status, (json.loads(text) if text.startswith("{") else text), len(raw)

    def path_of(self, obj):
        meta = obj["metadata"]
        return COLLECTIONS[(obj["apiVersion"], obj["kind"])].format(ns=meta.get("namespace", "default"))

    def create(self, obj):
        return self.request("POST", self.path_of(obj), obj)[1]

    def create_all(self, objs, threads=8):
        """Create every object, a few at a time; the first failure raises."""
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(self.create, objs))

    def patch(self, path, body):
        """A JSON merge patch."""
        return self.request("PATCH", path, body, content_type="application/merge-patch+json")[1]

    def list(self, path, **params):
        """The items of a collection, with the size of the answer in bytes."""
        query = ("?" + urllib.parse.urlencode(params)) if params else ""
        _, answer, size = self.request("GET", path + query)
        return answer["items"], size

    def items(self, path, **params):
        return self.list(path, **params)[0]

    def delete_all(self, path, **params):
        """Delete a collection's objects at once, without grace (nothing runs them: no kubelet)."""
        query = "?" + urllib.parse.urlencode(dict(params, gracePeriodSeconds=0))
        self.request("DELETE", path + query, {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})
