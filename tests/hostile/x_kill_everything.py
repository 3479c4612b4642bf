"""Kills every process it can see (pid 1 of the sandbox and its own kernel included) after the tests: nothing is
lost. (It reads the pids from /proc: a warm kernel's pid, forked by a factory that forked many before it, can be
any number.)"""
APPEND = [
    "import os, signal\n"
    "for pid in sorted((int(p) for p in os.listdir('/proc') if p.isdigit()), key=lambda p: p == os.getpid()):\n"
    "    try:\n"
    "        os.kill(pid, signal.SIGKILL)\n"
    "    except OSError:\n"
    "        pass"
]
NEEDS_SANDBOX = True  # only bubblewrap hides files, the network and other processes
EXPECT = {"score": 7, "flags": set(), "message": "kernel crashed"}
