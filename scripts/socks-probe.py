#!/usr/bin/env python3
"""Probe a flurry-client binary's SOCKS listener as a local attacker would.

Usage: scripts/socks-probe.py BINARY silent|emfile

silent: open three connections that send nothing, then time five SOCKS
        greetings (each waits for the method selection).
emfile: run the binary under `ulimit -n 24`, open 64 silent connections so
        that Accept fails with EMFILE, close them, then try one greeting.

The binary runs with -socks on a free loopback port and a broker URL that
is never contacted (no greeting gets as far as a CONNECT). See
docs/security.md.
"""
import os
import socket
import subprocess
import sys
import time

bin_, mode = sys.argv[1], sys.argv[2]
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
addr = ("127.0.0.1", port)
cmd = [bin_, "-url", "http://127.0.0.1:1/", "-loopback-only", "-socks", "127.0.0.1:%d" % port]
if mode == "emfile":
    cmd = ["sh", "-c", 'ulimit -n 24 && exec "$@"', "sh"] + cmd
p = subprocess.Popen(cmd, stderr=subprocess.PIPE)
while True:
    l = p.stderr.readline().decode()
    if "SOCKS5 proxy on" in l: break
def greet(timeout):
    c = socket.create_connection(addr); c.settimeout(timeout)
    t = time.time()
    try:
        c.sendall(b"\x05\x01\x00"); r = c.recv(2)
        return (time.time() - t, r)
    except Exception as e:
        return (time.time() - t, repr(e))
    finally:
        c.close()
if mode == "silent":
    silent = [socket.create_connection(addr) for _ in range(3)]
    t0 = time.time()
    res = [greet(30) for _ in range(5)]
    print("%s: 5 greetings behind 3 silent connections: %.3f s; replies %s" % (os.path.basename(bin_), time.time() - t0, [r[1] for r in res]))
else:
    flood = [socket.create_connection(addr) for _ in range(64)]
    time.sleep(1)  # let the client hit EMFILE
    for c in flood: c.close()
    time.sleep(1)
    d, r = greet(10)
    print("%s: greeting after an EMFILE flood of 64 connections: reply %r after %.3f s; process %s" % (os.path.basename(bin_), r, d, "running" if p.poll() is None else "exited %s" % p.poll()))
p.terminate(); p.wait()
