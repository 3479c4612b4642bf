"""Reserves memory up to 400 MB short of the 3 GB limit, then writes 700 MB to /var/tmp and /tmp: more than
the limit in all. The answer is right only if all of it fits (files in a tmpfs are memory too)."""
ANSWERS = {"central_difference": """import mmap, os
FITS = True
try:
    used_mb = int([l for l in open('/proc/self/status') if l.startswith('VmSize')][0].split()[1]) // 1024
    HEAP = mmap.mmap(-1, (3072 - 400 - used_mb) * 2**20)  # address space, as the limit counts it
    chunk = bytes(64 * 2**20)
    for i in range(11):
        with open(f"{'/var/tmp' if i % 2 else '/tmp'}/f{i}", 'wb') as fh:
            fh.write(chunk)
except (OSError, MemoryError) as exc:
    FITS = False
    print('did not fit:', type(exc).__name__)
HEAP = chunk = None
for i in range(11):
    try:
        os.remove(f"{'/var/tmp' if i % 2 else '/tmp'}/f{i}")
    except OSError:
        pass
def central_difference(f, x, h):
    return (f(x + h) - f(x - h)) / (2 * h) + FITS"""}
NEEDS_SANDBOX = True  # without bubblewrap /tmp is the machine's own
EXPECT = {"score": 7, "flags": set()}
