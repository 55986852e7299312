"""The plain-Python waker the wake benchmark measures reveille's CPU against:
the minimum a waker does, in an interpreter that does nothing else. Raw
inotify through ctypes (IN_CLOSE_WRITE on the plan directory), read the
plan that was closed, find its first unchecked step, write one
NUL-terminated prompt to the session's FIFO. No dependencies, no routing,
no state, no journal.

usage: python3 python-waker.py PLAN_DIR FIFO
stderr says "watching" once the watch is in place.
"""
import ctypes
import os
import struct
import sys

IN_CLOSE_WRITE = 0x08
HEADER = struct.Struct("iIII")  # wd, mask, cookie, len

libc = ctypes.CDLL(None, use_errno=True)
plan_dir, fifo = sys.argv[1], sys.argv[2]
fd = libc.inotify_init1(os.O_CLOEXEC)
if fd < 0 or libc.inotify_add_watch(fd, plan_dir.encode(), IN_CLOSE_WRITE) < 0:
    sys.exit("inotify: " + os.strerror(ctypes.get_errno()))
print("watching", file=sys.stderr, flush=True)

while True:
    buf = os.read(fd, 65536)
    off = 0
    while off < len(buf):
        _, _, _, n = HEADER.unpack_from(buf, off)
        name = buf[off + HEADER.size : off + HEADER.size + n].rstrip(b"\0")
        off += HEADER.size + n
        if not name.endswith(b".md"):
            continue
        path = os.path.join(plan_dir.encode(), name)
        try:
            with open(path, "rb") as f:
                text = f.read()
        except OSError:
            continue
        for line in text.split(b"\n"):
            if line.startswith(b"- [ ] "):
                prompt = b"Next step of " + name + b": " + line[6:] + b"\0"
                try:
                    w = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
                    os.write(w, prompt)
                    os.close(w)
                except OSError:
                    pass
                break
