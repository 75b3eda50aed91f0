"""A TCPStore client for the esv-stored tests, in torch's newer dialect
(the numbers of torch's TCPStoreBackend.hpp): python3 storecli.py is
imported by the tests' inline scripts (sys.path has this directory)."""
import socket
import struct
import time

VALIDATE, SET, CSET, GET, ADD, CHECK, WAIT, NUMKEYS, DELETE, APPEND, \
    MGET, MSET, CANCEL, PING, QPUSH, QPOP, QLEN = range(17)
STOP_WAITING = 0


def s(b):
    return struct.pack("<Q", len(b)) + b


class C:
    def __init__(self, port, host="127.0.0.1", hello=True, timeout=10):
        self.k = socket.create_connection((host, port), timeout=timeout)
        if hello:
            self.k.sendall(bytes([VALIDATE]) + struct.pack("<I", 0x3C85F7CE))
            self.ping()

    def send(self, b):
        self.k.sendall(b)

    def read(self, n):
        out = bytearray()
        while len(out) < n:
            d = self.k.recv(min(n - len(out), 1 << 20))
            if not d:
                raise EOFError("closed after %d of %d bytes" % (len(out), n))
            out += d
        return bytes(out)

    def ping(self, v=4242):
        self.send(bytes([PING]) + struct.pack("<I", v))
        got = struct.unpack("<I", self.read(4))[0]
        assert got == v, "PING echoes %d, not %d" % (got, v)

    def set(self, k, v):
        self.send(bytes([SET]) + s(k) + s(v))

    def get(self, k):
        self.send(bytes([GET]) + s(k))
        return self.read(struct.unpack("<Q", self.read(8))[0])

    def add(self, k, n):
        self.send(bytes([ADD]) + s(k) + struct.pack("<q", n))
        return struct.unpack("<q", self.read(8))[0]

    def closed(self):
        """True once the server hung up (EOF or a reset)."""
        try:
            return self.k.recv(1) == b""
        except ConnectionResetError:
            return True


def connect(port, host, within, timeout=10):
    """A C once the store answers, retried for `within` seconds (the
    store may start after the workers); the last OSError past that."""
    deadline = time.monotonic() + within
    while True:
        try:
            return C(port, host=host, timeout=timeout)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
