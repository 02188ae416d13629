#!/usr/bin/env python3
"""A web server for the delivery tests: serves DIR read-only over HTTP, as any web server
serving an output folder would, and stores what an HTTP PUT sends under DIR/results/ (as a
WebDAV-enabled server would), for run-here.sh --post.

    httpd.py DIR PORTFILE [PORT]

Listens on 127.0.0.1, on PORT or else one the kernel picks, written to PORTFILE once it
listens.
"""

import http.server
import os
import sys


class Handler(http.server.SimpleHTTPRequestHandler):
    def do_PUT(self):
        name = os.path.basename(self.path)
        if not self.path.startswith("/results/") or not name or name.startswith("."):
            self.send_error(403, "PUT only into /results/")
            return
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        folder = os.path.join(self.directory, "results")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, name), "wb") as f:
            f.write(body)
        self.send_response(201)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format, *args):
        agent = self.headers.get("User-Agent", "-") if hasattr(self, "headers") else "-"
        sys.stderr.write("httpd: %s (%s)\n" % (format % args, agent))


def main():
    folder, portfile = sys.argv[1], sys.argv[2]
    port = int(sys.argv[3]) if len(sys.argv) > 3 else 0

    def handler(*args, **kwargs):
        return Handler(*args, directory=folder, **kwargs)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(portfile + ".tmp", portfile)
    server.serve_forever()


if __name__ == "__main__":
    main()
