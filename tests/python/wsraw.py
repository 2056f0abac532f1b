# SPDX-License-Identifier: MIT
"""A minimal WebSocket client for the tests (RFC 6455 over a plain socket): reads rcanvas' text and binary
messages, decodes the 56-byte frame header (docs/protocol.md), and a PNG with zlib (no imaging library)."""

import base64
import json
import os
import socket
import struct
import zlib

import numpy as np


class RawWS:
    def __init__(self, host, port, path, timeout=10, headers=None):
        """headers: more request headers ({"Cookie": …, "Origin": …})."""
        self.sock = socket.create_connection((host, port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        req = (f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
               f"Sec-WebSocket-Protocol: rcanvas.v1\r\n{extra}\r\n")
        self.sock.sendall(req.encode())
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("closed during the handshake")
            self.buf += chunk
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        status = head.split(b"\r\n", 1)[0]
        if b" 101 " not in status:
            raise ConnectionError(f"upgrade refused: {status!r}")

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self):
        """The next message: str (text) or bytes (binary). Answers pings; raises ConnectionError on close."""
        data, kind = b"", None
        while True:
            b0, b1 = self._read(2)
            op, n = b0 & 15, b1 & 127
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            payload = self._read(n)
            if op == 8:
                raise ConnectionError(f"close {payload[:2].hex()} {payload[2:]!r}")
            if op == 9:
                self.send(payload, opcode=10)
                continue
            if op in (1, 2):
                kind = op
            data += payload
            if b0 & 0x80:
                return data.decode() if kind == 1 else data

    def send(self, payload, opcode=1):
        if isinstance(payload, str):
            payload = payload.encode()
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([0x80 | opcode])
        head += bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(head + mask + masked)

    def send_json(self, obj):
        self.send(json.dumps(obj))

    def close(self):
        self.sock.close()


HEADER = struct.Struct("<IBBHIHHqIIIIIIII")


def parse_frame(msg):
    """(header dict, payload bytes) of a binary frame message."""
    f = HEADER.unpack_from(msg)
    keys = ("magic", "version", "codec", "flags", "seq", "tile_index", "tile_count", "timestamp_us",
            "frame_width", "frame_height", "x", "y", "w", "h", "rtt_us", "payload_bytes")
    h = dict(zip(keys, f))
    assert h["magic"] == 0x46434352, hex(h["magic"])
    return h, msg[HEADER.size:HEADER.size + h["payload_bytes"]]


def decode_png(data):
    """An 8-bit RGB or RGBA PNG as a (H, W, C) uint8 array (all five row filters)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, typ = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if typ == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6), (depth, ctype)
            ch = 3 if ctype == 2 else 4
        elif typ == b"IDAT":
            idat += body
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + w * ch)
    out = np.zeros((h, w * ch), np.int32)
    prev = np.zeros(w * ch, np.int32)
    for r in range(h):
        f, line = raw[r, 0], raw[r, 1:].astype(np.int32)
        if f == 0:
            cur = line
        elif f == 2:
            cur = (line + prev) & 255
        else:
            cur = np.zeros_like(line)
            for i in range(w * ch):
                a = cur[i - ch] if i >= ch else 0
                b = prev[i]
                c = prev[i - ch] if i >= ch else 0
                if f == 1:
                    p = a
                elif f == 3:
                    p = (a + b) // 2
                else:
                    pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                    p = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                cur[i] = (line[i] + p) & 255
        out[r] = cur
        prev = cur
    return out.astype(np.uint8).reshape(h, w, ch)
