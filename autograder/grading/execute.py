"""Running the assembled notebook in a sandboxed kernel (nbclient), with limits per cell and per
notebook, a cap on the output kept, and a hard kill at the deadline."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import time
from pathlib import Path

import nbformat

from . import sandbox
from .jobs import Job
from .kernel_start import KernelStartFailed, start_with_retries

SETUP_TIMEOUT_S = 120
MAX_RECOVERIES = (
    12  # kernels started again after a crash, per notebook: one per exercise (the deadline still bounds the time)
)


def _make_client_class():
    from nbclient import NotebookClient

    class GradingClient(NotebookClient):
        """nbclient with a cap on the output kept per cell, and a record of cells that timed out."""

        output_cap = 512 * 1024
        timed_out: set
        truncated: set
        current = -1
        _sizes: dict

        def output(self, outs, msg, display_id, cell_index):
            size = len(json.dumps(msg.get("content", {}), default=str))
            used = self._sizes.get(cell_index, 0)
            if used + size > self.output_cap and msg["msg_type"] in (
                "stream",
                "display_data",
                "execute_result",
                "update_display_data",
            ):
                self.truncated.add(cell_index)
                return None
            self._sizes[cell_index] = used + size
            return super().output(outs, msg, display_id, cell_index)

        async def _async_handle_timeout(self, timeout, cell=None):
            self.timed_out.add(self.current)
            return await super()._async_handle_timeout(timeout, cell)

    return GradingClient


def execute(run_nb, scratch: Path, job: Job) -> dict:
    """Run the notebook in a sandboxed kernel. Returns {"status": {index: ok|error|timeout|died|not_run|skipped},
    "stopped": why it stopped early (None), "truncated": cells whose output was cut, "recovered": cells that
    crashed the kernel, after which a fresh kernel went on}."""
    from jupyter_client.kernelspec import KernelSpec
    from jupyter_client.manager import AsyncKernelManager
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    limits = job.limits
    info = sandbox.SandboxInfo(job.sandbox.tool, job.sandbox.as_root, job.sandbox.drop_uid)
    uid = sandbox.slot_uid(info, job.uid_seq)
    home = scratch / "home"
    env = {
        "HOME": str(home),
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": str(home / "mpl"),
        "IPYTHONDIR": str(home / "ipython"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTER_DATA_DIR": str(home / "data"),
        "TMPDIR": "/tmp" if info.active else str(home / "tmp"),
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "OMP_NUM_THREADS": str(job.threads),
        "MKL_NUM_THREADS": str(job.threads),
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }
    for sub in ("mpl", "ipython", "runtime", "data", "tmp"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    hide = [Path(p) for p in job.hide]
    argv = sandbox.kernel_command(info, limits, scratch, job.uid_seq, env, hide)
    if uid is not None:
        for path in [scratch, *scratch.rglob("*")]:
            os.lchown(path, uid, uid)

    class SandboxKernelManager(AsyncKernelManager):
        def write_connection_file(self, **kwargs):
            result = super().write_connection_file(**kwargs)
            if uid is not None:
                os.chown(self.connection_file, uid, uid)
            return result

    if not info.active or shutil.which("prlimit") is None:

        def preexec():
            import resource

            for res, value in (
                (resource.RLIMIT_AS, sandbox.address_space_mb(info, limits) * 2**20),
                (resource.RLIMIT_CPU, limits.cpu_s),
                (resource.RLIMIT_NPROC, limits.nproc),
                (resource.RLIMIT_FSIZE, limits.fsize_mb * 2**20),
            ):
                try:
                    resource.setrlimit(res, (value, value))
                except (ValueError, OSError):
                    pass

        start_kwargs = {
            "cwd": str(scratch / "work"),
            "preexec_fn": preexec if shutil.which("prlimit") is None else None,
        }
    else:
        start_kwargs = {"cwd": str(scratch / "work")}
    start_kwargs = {k: v for k, v in start_kwargs.items() if v is not None}

    Client = _make_client_class()
    timed_out: set[int] = set()
    truncated: set[int] = set()
    sizes: dict[int, int] = {}

    def new_client(incarnation):
        """A kernel manager and nbclient client; a kernel started again after a crash gets new ones."""
        km = SandboxKernelManager(
            transport="ipc",
            ip=str(scratch / f"k{incarnation}"),
            connection_file=str(scratch / f"kernel{incarnation}.json"),
        )
        km._kernel_spec = KernelSpec(
            argv=argv, display_name="grading sandbox", language="python", interrupt_mode="message", env={}
        )
        client = Client(
            run_nb,
            km=km,
            timeout=limits.cell_timeout_s,
            allow_errors=True,
            interrupt_on_timeout=True,
            error_on_timeout={"ename": "TimeoutError", "evalue": f"cell stopped after {limits.cell_timeout_s} s"},
            startup_timeout=120,
            record_timing=False,
            iopub_timeout=4,
            shutdown_kernel="immediate",
            resources={"metadata": {"path": str(scratch / "work")}},
        )
        client.output_cap = limits.output_kb * 1024
        client.timed_out, client.truncated, client._sizes = timed_out, truncated, sizes
        return km, client

    km, client = new_client(0)
    status = {i: "not_run" for i in range(len(run_nb.cells))}
    deadline = time.monotonic() + limits.timeout_s
    stopped = None
    start_failures: list[str] = []
    failed_starts: list[None] = []

    recovered: list[int] = []

    async def start() -> None:
        t0 = time.monotonic()
        await client.async_start_new_kernel(**start_kwargs)
        await client.async_start_new_kernel_client()
        if os.environ.get("REVAD_DEBUG"):
            print(f"kernel start: {time.monotonic() - t0:.2f} s", file=sys.stderr, flush=True)

    async def recover(crashed: int) -> bool:
        """A fresh kernel in the state the notebook had before cell `crashed`: the setup and every
        earlier cell that ran are run again (copies: their outputs are not kept), unprobed."""
        nonlocal km, client
        if len(recovered) >= MAX_RECOVERIES:
            return False
        recovered.append(crashed)
        try:
            await asyncio.wait_for(client._async_cleanup_kernel(), timeout=15)
        except Exception:  # noqa: BLE001
            pass
        sandbox.kill_uid(uid)
        km, client = new_client(len(recovered))
        try:
            await start()
            earlier = [
                i for i in range(crashed) if run_nb.cells[i].cell_type == "code" and status[i] in ("ok", "error")
            ]
            setup, rest = earlier[:1], earlier[1:]
            sources = (
                [run_nb.cells[i].source for i in setup]
                + ["__revad_probe__.replaying = True"]
                + [run_nb.cells[i].source for i in rest]
                + ["__revad_probe__.replaying = False"]
            )
            crashed_cell = run_nb.cells[crashed]
            try:
                for source in sources:  # (nbclient stores the cell it ran at the index it is given: put it back)
                    await asyncio.wait_for(
                        client.async_execute_cell(nbformat.v4.new_code_cell(source), crashed),
                        timeout=max(1.0, deadline - time.monotonic()),
                    )
            finally:
                run_nb.cells[crashed] = crashed_cell
            return await client.km.is_alive()
        except Exception as exc:  # noqa: BLE001 -- it crashed again, or ran out of time: stop here
            print(f"recovery after cell {crashed} failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            return False

    async def run_all():
        nonlocal stopped

        async def clean_up():  # nothing of a failed start may linger into the next
            nonlocal km, client
            failed_starts.append(None)
            try:
                await asyncio.wait_for(client._async_cleanup_kernel(), timeout=15)
            finally:
                sandbox.kill_uid(uid)
                km, client = new_client(
                    f"s{len(failed_starts)}"
                )  # a fresh manager: a cleaned-up one cannot start again

        try:
            start_failures.extend(await start_with_retries(start, clean_up))
            if start_failures:
                print(f"kernel start retried: {start_failures}", file=sys.stderr, flush=True)
        except KernelStartFailed as exc:
            stopped = f"kernel_start: {exc}"
            return
        try:
            for index, cell in enumerate(run_nb.cells):
                if cell.cell_type != "code":
                    status[index] = "ok"
                    continue
                if cell.metadata.get("revad", {}).get("skip") == "measurement":
                    status[index] = "skipped"  # an unchanged measurement cell of the lesson (grading/measurements.py)
                    continue
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    stopped = "deadline"
                    break
                client.current = index
                # the grader's own setup (importing torch and the checks) is not the learner's time
                client.timeout = (
                    max(limits.cell_timeout_s, SETUP_TIMEOUT_S)
                    if cell.metadata.get("revad", {}).get("role") == "setup"
                    else limits.cell_timeout_s
                )
                t0 = time.monotonic()
                try:
                    await asyncio.wait_for(client.async_execute_cell(cell, index), timeout=remaining)
                except asyncio.TimeoutError:
                    status[index] = "timeout"
                    stopped = "deadline"
                    break
                except DeadKernelError:
                    status[index] = "died"
                    if await recover(index):
                        continue
                    stopped = "died"
                    break
                except CellTimeoutError:
                    status[index] = "timeout"
                    continue
                except Exception as exc:  # noqa: BLE001 -- a protocol error from a misbehaving kernel
                    status[index] = "died"
                    stopped = f"died: {type(exc).__name__}"
                    break
                if os.environ.get("REVAD_DEBUG"):
                    print(f"cell {index}: {time.monotonic() - t0:.2f} s", file=sys.stderr, flush=True)
                if index in client.timed_out:
                    status[index] = "timeout"
                elif any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
                    status[index] = "error"
                else:
                    status[index] = "ok"
                if status[index] == "ok" and not await client.km.is_alive():
                    status[index] = "died"
                    if await recover(index):
                        continue
                    stopped = "died"
                    break
        finally:
            try:
                await asyncio.wait_for(client._async_cleanup_kernel(), timeout=15)
            except Exception:  # noqa: BLE001
                pass

    try:
        asyncio.run(asyncio.wait_for(run_all(), timeout=limits.timeout_s + 200))
    except Exception as exc:  # noqa: BLE001
        stopped = stopped or f"deadline ({type(exc).__name__})"
    finally:
        try:
            manager = client.km or km
            if manager.provisioner and manager.provisioner.process:
                manager.provisioner.process.kill()
        except Exception:  # noqa: BLE001
            pass
        sandbox.kill_uid(uid)
    return {
        "status": status,
        "stopped": stopped,
        "truncated": sorted(truncated),
        "recovered": [i for i in recovered if not stopped or status.get(i) == "died"],
        "kernel_start_failures": start_failures,
    }
