#!/usr/bin/python3
"""A misbehaving proxy in front of one etcd member, for the tests of the
etcd backend's bad-reply handling.

    etcd_proxy.py UPSTREAM_URL PORTFILE FAULT[,FAULT...]

Listens on a free port of 127.0.0.1 (written to PORTFILE once it listens)
and forwards every POST to UPSTREAM_URL, streams included, except that
each FAULT spoils the next request it applies to, once, in order:

    html502     a proxy's HTML error page, status 502
    truncated   status 200 and the first half of the member's JSON reply
    status500   status 500 and an etcd-shaped JSON error
    compacted   a /v3/watch answered with a watch cancelled by compaction
    notjson     status 200 and a body that is not JSON at all
    future      every serializable /v3/kv/range from then on refused as etcd
                refuses a read at a revision the member has not reached
                (400, "required revision is a future revision"): only a
                linearizable read gets through

Each spoiled request is logged on stdout as "spoiled <fault> <path>".
"""
import http.client
import http.server
import socketserver
import sys
import threading
import urllib.parse

upstream = urllib.parse.urlsplit(sys.argv[1])
say_lock = threading.Lock()
faults = sys.argv[3].split(",") if len(sys.argv) > 3 and sys.argv[3] else []


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body, ctype="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def spoil(self, body):
        if not faults:
            return False
        fault = faults[0]
        if fault == "future":
            if self.path != "/v3/kv/range" or b'"serializable"' not in body:
                return False
        elif (fault == "compacted") != (self.path == "/v3/watch") and \
                fault not in ("html502", "status500"):
            return False
        if fault != "future":
            faults.pop(0)
        # One line at a time: the server runs a thread per request.
        with say_lock:
            print("spoiled", fault, self.path, flush=True)
        if fault == "html502":
            self.reply(502, b"<html><body><h1>502 Bad Gateway</h1>\n"
                       b"nginx</body></html>\n", "text/html")
        elif fault == "status500":
            self.reply(500, b'{"error":"etcdserver: request timed out",'
                       b'"code":14,"message":"etcdserver: request timed out"}')
        elif fault == "future":
            msg = b"etcdserver: mvcc: required revision is a future revision"
            self.reply(400, b'{"error":"%s","message":"%s","code":11}' % (
                msg, msg))
        elif fault == "notjson":
            self.reply(200, b"hello, I am not etcd\n", "text/plain")
        elif fault == "compacted":
            self.reply(200, b'{"result":{"header":{"revision":"99"},'
                       b'"canceled":true,"compact_revision":"98"}}\n')
        elif fault == "truncated":
            status, _, data = self.forward_unary(body)
            self.reply(status, data[:max(1, len(data) // 2)])
        return True

    def forward_unary(self, body):
        c = http.client.HTTPConnection(upstream.hostname, upstream.port,
                                       timeout=10)
        c.request("POST", self.path, body)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, r.getheader("Content-Type", ""), data

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        if self.spoil(body):
            return
        if self.path != "/v3/watch":
            status, ctype, data = self.forward_unary(body)
            self.reply(status, data, ctype)
            return
        # A stream: its lines, chunk by chunk, as they come.
        c = http.client.HTTPConnection(upstream.hostname, upstream.port)
        c.request("POST", self.path, body)
        r = c.getresponse()
        self.send_response(r.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            while True:
                line = r.readline()
                if not line:
                    break
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass
        c.close()


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


srv = Server(("127.0.0.1", 0), Proxy)
with open(sys.argv[2] + ".tmp", "w") as f:
    f.write("%d\n" % srv.server_address[1])
import os  # noqa: E402
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
srv.serve_forever()
