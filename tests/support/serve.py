#!/usr/bin/env python3
"""A loopback HTTP server for the download tests: serves ROOT, answers
`Range: bytes=N-` with 206, and can misbehave on purpose.

Usage: serve.py ROOT PORT_FILE LOG_FILE [--cut PATH:BYTES]

Binds 127.0.0.1 on a free port and writes the port to PORT_FILE. Every
request is appended to LOG_FILE as `METHOD PATH RANGE`. With --cut, the
first GET of PATH announces the whole length but sends only BYTES, then
closes the connection (a download broken off mid-way).
"""
import http.server
import os
import socketserver
import sys
import threading
import urllib.parse

root, port_file, log_file = sys.argv[1], sys.argv[2], sys.argv[3]
cuts = {}
if len(sys.argv) > 5 and sys.argv[4] == "--cut":
    path, n = sys.argv[5].rsplit(":", 1)
    cuts[path] = int(n)
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, head_only):
        path = urllib.parse.unquote(self.path.split("?", 1)[0])
        rng = self.headers.get("Range", "")
        with lock, open(log_file, "a") as log:
            log.write(f"{self.command} {path} {rng or '-'}\n")
        local = os.path.normpath(os.path.join(root, path.lstrip("/")))
        if not local.startswith(os.path.abspath(root)) or not os.path.isfile(local):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with open(local, "rb") as f:
            data = f.read()
        start = 0
        if rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[len("bytes="):-1])
        if start >= len(data) and start > 0:
            self.send_response(416)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = data[start:]
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        if head_only:
            return
        with lock:
            cut = cuts.pop(path, None)
        if cut is not None:
            self.wfile.write(body[:cut])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
            return
        self.wfile.write(body)

    def do_GET(self):
        self.answer(False)

    def do_HEAD(self):
        self.answer(True)

    def do_POST(self):
        # A search (b4 asks for follow-ups and newer versions): none here.
        n = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(n)
        with lock, open(log_file, "a") as log:
            log.write(f"POST {self.path} -\n")
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


srv = Server(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(port_file + ".tmp", port_file)
srv.serve_forever()
