#!/usr/bin/env python3
"""Runs a command and prints its resource use on stderr (what `time -v` would:
user and system CPU seconds, voluntary and involuntary context switches), so
that a host-bound benchmark's slow runs can be told from its fast ones.

    bench/async/rusage.py LABEL COMMAND...   # stderr: rusage,LABEL,user_s,sys_s,vcsw,ivcsw,wall_s
"""
import resource
import subprocess
import sys
import time

label, cmd = sys.argv[1], sys.argv[2:]
t0 = time.monotonic()
rc = subprocess.call(cmd)
wall = time.monotonic() - t0
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"rusage,{label},{r.ru_utime:.3f},{r.ru_stime:.3f},{r.ru_nvcsw},{r.ru_nivcsw},{wall:.3f}", file=sys.stderr)
sys.exit(rc)
