"""The command jupyter_client runs for a warm kernel: ask the factory for one, and live as long as it does.

    python -I -S fork_client.py SOCKET CONNECTION_FILE --cwd=... --uid=... --tmp-mb=... --nproc=... --env=K=V ...

It sends the request as one line of JSON and waits for the kernel's exit status, which becomes its own. Killed (as
jupyter_client kills a kernel), it closes the socket, and the factory kills the kernel. Standard library only: it
starts in milliseconds.
"""

import json
import socket
import sys


def request(argv: list[str]) -> tuple[str, dict]:
    socket_path, connection_file, *options = argv
    out: dict = {"connection_file": connection_file, "env": {}}
    for option in options:
        name, _, value = option.removeprefix("--").partition("=")
        if name == "env":
            key, _, val = value.partition("=")
            out["env"][key] = val
        else:
            out[name.replace("-", "_")] = value
    return socket_path, out


def main(argv: list[str]) -> int:
    socket_path, req = request(argv)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(socket_path)
    conn.sendall(json.dumps(req).encode() + b"\n")
    answer = json.loads(conn.makefile("r").readline() or '{"exit": 1}')
    if answer.get("error"):
        print(answer["error"], file=sys.stderr)  # the kernel's start failed: jupyter_client's log shows why
    return int(answer["exit"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
