#!/usr/bin/env python3
"""nginx's memcached_pass (Debian's nginx) in front of herdless and, side by side, Debian's
memcached: a page stored in the cache under "page:<uri>" is served over HTTP; a miss falls back
to an upstream HTTP server (a Python one here); a page stored later is then served from the
cache; a deleted one falls back again. Then, herdless only, with -o classic_stampede=stale: a
stale page (md I) sends the first reader to the upstream (its recompute) and serves the next
the stale page, so a cache-fronted site keeps one request per expiry on its backend.
"""

import http.server
import os
import shutil
import tempfile
import threading
import urllib.error
import urllib.request

import harness
from harness import Conn

NGINX_CONF = """
daemon off;
master_process off;
pid %(dir)s/nginx.pid;
error_log %(dir)s/error.log warn;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path %(dir)s/body;
    proxy_temp_path %(dir)s/proxy;
    fastcgi_temp_path %(dir)s/fastcgi;
    uwsgi_temp_path %(dir)s/uwsgi;
    scgi_temp_path %(dir)s/scgi;
    server {
        listen 127.0.0.1:%(port)d;
        location / {
            set $memcached_key "page:$uri";
            memcached_pass 127.0.0.1:%(cache)d;
            default_type text/html;
            error_page 404 502 504 = @upstream;
        }
        location @upstream {
            proxy_pass http://127.0.0.1:%(upstream)d;
        }
    }
}
"""


class Upstream(http.server.BaseHTTPRequestHandler):
    requests = 0

    def do_GET(self):
        Upstream.requests += 1
        body = b"from upstream: " + self.path.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def start_nginx(workdir, cache_port, upstream_port):
    port = harness.free_port()
    conf = os.path.join(workdir, "nginx-%d.conf" % cache_port)
    with open(conf, "w") as f:
        f.write(NGINX_CONF % {"dir": workdir, "port": port, "cache": cache_port, "upstream": upstream_port})
    return harness.Process("nginx", ["/usr/sbin/nginx", "-e", os.path.join(workdir, "error.log"),
                                     "-p", workdir, "-c", conf], port).start()


def get(port, path):
    """(status, content type, body) of GET path through nginx."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=harness.TIMEOUT) as r:
            return r.status, r.headers.get("Content-Type"), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read().decode()


def store(cache_port, key, value):
    with Conn(cache_port) as c:
        return c.call(b"set %s 0 0 %d\r\n%s\r\n" % (key, len(value), value))


def page_case(cache, nginx):
    """What nginx answered, step by step, in front of `cache`."""
    page = b"<html><body>cached page</body></html>"
    t = harness.Transcript()
    t.lines.append("store: %r" % store(cache.port, b"page:/hello", page))
    t.lines.append("cached page: %r" % (get(nginx.port, "/hello"),))
    t.lines.append("miss: %r" % (get(nginx.port, "/other"),))
    store(cache.port, b"page:/other", b"now cached")
    t.lines.append("stored later: %r" % (get(nginx.port, "/other"),))
    with Conn(cache.port) as c:
        t.lines.append("delete: %r" % c.call(b"delete page:/other\r\n"))
    t.lines.append("deleted: %r" % (get(nginx.port, "/other"),))
    return t


def check_stale(results, workdir, upstream_port):
    d = harness.start_herdless(["-o", "classic_stampede=stale,stale_grace=60"])
    nginx = start_nginx(workdir, d.port, upstream_port)
    store(d.port, b"page:/hot", b"hot page v1")
    results.equal(get(nginx.port, "/hot")[2], "hot page v1", "stale mode: the page is served")
    with Conn(d.port) as c:
        results.equal(c.call(b"md page:/hot I\r\n"), b"HD\r\n", "stale mode: page invalidated")
    before = Upstream.requests
    first, second = get(nginx.port, "/hot"), get(nginx.port, "/hot")
    results.equal(first[2], "from upstream: /hot", "stale mode: the first reader goes upstream")
    results.equal(second[2], "hot page v1", "stale mode: the next reader gets the stale page")
    results.equal(Upstream.requests - before, 1, "stale mode: one upstream request for the expiry")
    nginx.stop()
    d.stop()


def body(results):
    workdir = tempfile.mkdtemp(prefix="herdless-nginx-")
    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    try:
        sbs = harness.SideBySide()
        transcripts = []
        for cache in sbs.pair():
            nginx = start_nginx(workdir, cache.port, upstream.server_address[1])
            transcripts.append(page_case(cache, nginx))
            nginx.stop()
        reference, ours = transcripts
        results.check(ours.differences(reference) is None, "nginx: the same pages as with memcached",
                      ours.differences(reference) or "")
        results.check("text/html" in ours.lines[1] and "cached page" in ours.lines[1],
                      "nginx: the cached page, as text/html", ours.lines[1])
        results.check("from upstream: /other" in ours.lines[2], "nginx: a miss goes upstream", ours.lines[2])
        results.check("now cached" in ours.lines[3], "nginx: a page stored later is served", ours.lines[3])
        results.check("from upstream" in ours.lines[5], "nginx: a deleted page goes upstream", ours.lines[5])
        sbs.stop(results)
        check_stale(results, workdir, upstream.server_address[1])
    finally:
        upstream.shutdown()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    harness.run("test_clients_nginx", body)
