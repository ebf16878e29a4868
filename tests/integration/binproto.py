"""memcached's binary protocol for the integration tests: request packets (lengths may be set
to lie, to test the server's checks), response parsing, and a connection that reads whole
response packets with harness.Conn's bounded waits.
"""

import struct
from collections import namedtuple

import harness

REQ_MAGIC = 0x80
RES_MAGIC = 0x81
HEADER = 24

OP = dict(GET=0x00, SET=0x01, ADD=0x02, REPLACE=0x03, DELETE=0x04, INCR=0x05, DECR=0x06,
          QUIT=0x07, FLUSH=0x08, GETQ=0x09, NOOP=0x0a, VERSION=0x0b, GETK=0x0c, GETKQ=0x0d,
          APPEND=0x0e, PREPEND=0x0f, STAT=0x10, SETQ=0x11, ADDQ=0x12, REPLACEQ=0x13,
          DELETEQ=0x14, INCRQ=0x15, DECRQ=0x16, QUITQ=0x17, FLUSHQ=0x18, APPENDQ=0x19,
          PREPENDQ=0x1a, VERBOSITY=0x1b, TOUCH=0x1c, GAT=0x1d, GATQ=0x1e, SASL_LIST=0x20,
          SASL_AUTH=0x21, SASL_STEP=0x22, GATK=0x23, GATKQ=0x24)
OPNAME = {v: k for k, v in OP.items()}

STATUS = dict(OK=0x00, NOT_FOUND=0x01, EXISTS=0x02, TOO_LARGE=0x03, EINVAL=0x04,
              NOT_STORED=0x05, NON_NUMERIC=0x06, AUTH_ERROR=0x20, UNKNOWN=0x81, ENOMEM=0x82)

Response = namedtuple("Response", "magic opcode keylen extlen datatype status bodylen opaque "
                                  "cas extras key value")


def packet(op, key=b"", extras=b"", value=b"", cas=0, opaque=0, keylen=None, extlen=None,
           bodylen=None, magic=REQ_MAGIC):
    """A request packet; keylen/extlen/bodylen override the true lengths."""
    if isinstance(op, str):
        op = OP[op]
    if isinstance(key, str):
        key = key.encode()
    if isinstance(value, str):
        value = value.encode()
    kl = len(key) if keylen is None else keylen
    el = len(extras) if extlen is None else extlen
    bl = len(extras) + len(key) + len(value) if bodylen is None else bodylen
    return struct.pack(">BBHBBHIIQ", magic, op, kl, el, 0, 0, bl, opaque, cas) + extras + key + value


def set_extras(flags=0, exptime=0):
    return struct.pack(">II", flags, exptime)


def incr_extras(delta=1, initial=0, exptime=0):
    return struct.pack(">QQI", delta, initial, exptime)


def exp_extras(exptime):
    return struct.pack(">I", exptime)


def set_(key, value, flags=0, exptime=0, cas=0, opaque=0, op="SET"):
    return packet(op, key, set_extras(flags, exptime), value, cas=cas, opaque=opaque)


def get(key, opaque=0, op="GET"):
    return packet(op, key, opaque=opaque)


def incr(key, delta=1, initial=0, exptime=0, cas=0, opaque=0, op="INCR"):
    return packet(op, key, incr_extras(delta, initial, exptime), cas=cas, opaque=opaque)


def parse(buf):
    """(responses, rest): the whole response packets at the start of buf, and what follows."""
    out = []
    while len(buf) >= HEADER:
        magic, opcode, keylen, extlen, datatype, status, bodylen, opaque, cas = \
            struct.unpack(">BBHBBHIIQ", buf[:HEADER])
        if magic != RES_MAGIC or len(buf) < HEADER + bodylen:
            break
        body = buf[HEADER:HEADER + bodylen]
        out.append(Response(magic, opcode, keylen, extlen, datatype, status, bodylen, opaque, cas,
                            body[:extlen], body[extlen:extlen + keylen], body[extlen + keylen:]))
        buf = buf[HEADER + bodylen:]
    return out, buf


class BinConn(harness.Conn):
    """harness.Conn that reads response packets."""

    def recv_packet(self):
        head = self.recv_exact(HEADER)
        bodylen = struct.unpack(">I", head[8:12])[0]
        (resp,), rest = parse(head + self.recv_exact(bodylen))
        assert not rest
        return resp

    def call(self, data):
        self.send(data)
        return self.recv_packet()

    def until_noop(self, opaque):
        """Sends a Noop with `opaque` and returns every packet before its reply."""
        self.send(packet("NOOP", opaque=opaque))
        out = []
        while True:
            resp = self.recv_packet()
            if resp.opcode == OP["NOOP"] and resp.opaque == opaque:
                return out
            out.append(resp)


def value_of(resp):
    """The 8-byte counter of an Incr/Decr reply."""
    return struct.unpack(">Q", resp.value)[0]
