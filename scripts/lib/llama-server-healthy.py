#!/usr/bin/env python3
"""Exits 0 when the llama-server on 127.0.0.1:PORT answers /health with 200.

Used by the llama-server scripts to wait for a server to load its model
(Python's standard library: no curl needed on a fresh machine).
"""
import sys
import urllib.request

try:
    with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/health", timeout=5) as r:
        sys.exit(0 if r.status == 200 else 1)
except Exception:
    sys.exit(1)
