"""Pieces of learner code the x_records_* specs are built from (issue 47's route and its variants): a cell of helpers
(the right answers by autograd, a well-formed record and frame, the grader's socket, the kernel's child processes and
a thread that watches for them; duplicates of a record file's descriptors, from when probes wrote
files), and the head of a blank `adjoint_trace` that notes the right answers for the probe
call running (found through the call stack) and returns zeros. Not a spec: specs are the [hx]_*.py files."""

HELPERS = """import hashlib, importlib, io, json, os, signal, socket, time
import torch
_th = importlib.import_module('thr' + 'eading')
ME, RIGHT = os.getpid(), {}
SOCKET = os.path.join(os.getcwd(), '..', 'probe', 'grader', 'records.sock')

def _record(call):
    buf = io.BytesIO()
    torch.save({'cell': 'test_adjoint_trace', 'call': call, 'results': [RIGHT.get(call, [])], 'patched': []}, buf)
    return buf.getvalue()

def _send(call):
    data = _record(call)
    head = {'cell': 'test_adjoint_trace', 'call': call, 'size': len(data), 'sha256': hashlib.sha256(data).hexdigest()}
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(SOCKET)
        sock.sendall(b'revad-record/1\\n' + json.dumps(head, sort_keys=True).encode() + b'\\n' + data)

def _children():
    out = []
    for pid in os.listdir('/proc'):
        try:
            with open(f'/proc/{pid}/stat') as fh:
                if int(fh.read().rsplit(')', 1)[1].split()[1]) == ME:
                    out.append(int(pid))
        except (OSError, ValueError, IndexError):
            pass
    return out

def _courier(pid):
    '''(header, size) of a courier of test_adjoint_trace, from its command line; None for any other process.'''
    args = open(f'/proc/{pid}/cmdline', 'rb').read().split(b'\\0')
    try:
        head, size = json.loads(args[-3]), int(args[-2])
    except (ValueError, IndexError):
        return None
    return (head, size) if head.get('cell') == 'test_adjoint_trace' else None

def _each_new_child(act):
    def watch():
        seen = set()
        while True:
            for pid in _children():
                if pid not in seen:
                    seen.add(pid)
                    try:
                        act(pid)
                    except Exception:
                        pass
            time.sleep(0.0005)
    _th.Thread(target=watch, daemon=True).start()"""

DUPLICATES_OF_THE_RECORD = """import os


def _dups_of_the_record(cell, k):
    # duplicates of every descriptor of this process that leads to the probe's record file of call k of `cell`
    kept = []
    for fd in os.listdir('/proc/self/fd'):
        try:
            if int(fd) not in kept and os.readlink(f'/proc/self/fd/{fd}').endswith(f'/probe/{cell}.{k}.pt'):
                kept.append(os.dup(int(fd)))
        except OSError:
            pass
    return kept"""

ADJOINT_HEAD = """def adjoint_trace(x1, x2):
    import sys
    a = torch.tensor(x1, requires_grad=True, dtype=torch.float64)
    b = torch.tensor(x2, requires_grad=True, dtype=torch.float64)
    (a * b + torch.sin(a)).backward()
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_name != 'probe':
        frame = frame.f_back
    if frame is None:
        return None
    k, params = frame.f_locals['k'], frame.f_locals['params']
    RIGHT.setdefault(k, []).append({'w1': a.grad.item(), 'w2': b.grad.item(), 'w3': 1.0, 'w4': 1.0, 'w5': 1.0})
"""
ZEROS = "    return dict.fromkeys(['w1', 'w2', 'w3', 'w4', 'w5'], 0.0)"
