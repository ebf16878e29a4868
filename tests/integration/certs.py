"""Test certificates made with Debian's `openssl` command: a CA, server certificates for
127.0.0.1 signed by it (two, with different serials, for refresh_certs) and a client
certificate for ssl_verify_mode. Everything lives in a temporary directory removed at exit.
"""

import atexit
import os
import shutil
import ssl
import subprocess
import tempfile


def _openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


class Certs:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="herdless-certs-")
        os.chmod(self.dir, 0o755)  # the daemon runs as nobody under root
        atexit.register(shutil.rmtree, self.dir, True)
        d = self.dir
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                 "/CN=herdless test CA", "-keyout", "ca.key", "-out", "ca.pem", cwd=d)
        for name, serial in (("server", "1001"), ("server2", "1002"), ("client", "2001")):
            cn = "herdless test client" if name == "client" else "127.0.0.1"
            _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=" + cn,
                     "-keyout", name + ".key", "-out", name + ".csr", cwd=d)
            ext = os.path.join(d, name + ".ext")
            with open(ext, "w") as f:
                f.write("subjectAltName=IP:127.0.0.1\n")
            _openssl("x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                     "-set_serial", serial, "-days", "2", "-extfile", ext,
                     "-out", name + ".pem", cwd=d)
        for f in os.listdir(d):
            os.chmod(os.path.join(d, f), 0o644)

    def path(self, name):
        return os.path.join(self.dir, name)

    def client_context(self, with_cert=False):
        """A client context that trusts the test CA (and presents the client certificate)."""
        ctx = ssl.create_default_context(cafile=self.path("ca.pem"))
        ctx.check_hostname = False
        if with_cert:
            ctx.load_cert_chain(self.path("client.pem"), self.path("client.key"))
        return ctx

    def server_args(self, chain="server.pem", key="server.key", extra=""):
        opts = "ssl_chain_cert=%s,ssl_key=%s" % (self.path(chain), self.path(key))
        if extra:
            opts += "," + extra
        return ["-Z", "-o", opts]
