"""Answers are right only if the network (a port on the grader's own machine, and the internet) is unreachable."""
PREPEND = ["""import socket
REACHED = 0
for host, port in [("127.0.0.1", {PORT}), ("1.1.1.1", 53), ("pypi.org", 443)]:
    try:
        socket.create_connection((host, port), timeout=2).close()
        REACHED += 1
    except OSError:
        pass"""]
ANSWERS = {"central_difference": "def central_difference(f, x, h):\n    return (f(x + h) - f(x - h)) / (2 * h) + REACHED"}
NEEDS_SANDBOX = True  # only bubblewrap hides files, the network and other processes
EXPECT = {"score": 7, "flags": set()}
