"""Running the assembled notebook in a sandboxed kernel (nbclient), with limits per cell and per
notebook, a cap on the output kept, and a hard kill at the deadline."""

from __future__ import annotations

import asyncio
import functools
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import nbformat
from nbformat import NotebookNode

from ..probes import output_cap
from . import sandbox, warm
from .jobs import Job
from .kernel_start import KernelStartFailed, start_with_retries
from .records import RecordCollector

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
        errored: set
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

        async def _check_raise_for_error(self, cell, cell_index, exec_reply):
            # the kernel's own word that the cell ended in an error, whatever the cell shows: an exception handler
            # of the learner's can keep a probe's error out of the cell's outputs, not out of this reply
            if exec_reply is not None and exec_reply.get("content", {}).get("status") == "error":
                self.errored.add(cell_index)
            return await super()._check_raise_for_error(cell, cell_index, exec_reply)

    return GradingClient


def execute(run_nb: NotebookNode, scratch: Path, job: Job, records: RecordCollector | None = None) -> dict:
    """Run the notebook in a sandboxed kernel, cell by cell; `records` takes each test cell's probe records as the
    cell ends. Returns {"status": {index: ok|error|timeout|died|not_run|skipped}, "stopped": why it stopped early
    (None), "truncated": cells whose output was cut, "recovered": cells that crashed the kernel, after which a fresh
    kernel went on}."""
    return SandboxedRun(run_nb, scratch, job, records).execute()


@functools.cache
def _has_gpu() -> bool:
    """Whether this grader has a CUDA device: asked once per process, not at every kernel start."""
    import torch

    return torch.cuda.is_available()


def kernel_environment(home: Path, threads: int, sandboxed: bool) -> dict[str, str]:
    """The kernel's whole environment: its own home and caches, headless plotting, a bounded thread count, the
    grader's PYTHONPATH where it has one (where its course packages come from: the kernel imports the same ones), and,
    on a grader without a GPU, Triton's interpreter: the only way its kernels run there, what the notebooks set
    themselves, and what a warm kernel's factory must know before it imports Triton (with torch's compiler)."""
    for sub in ("mpl", "ipython", "runtime", "data", "tmp"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    where = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}
    interpret = {} if _has_gpu() else {"TRITON_INTERPRET": "1"}
    return {
        **where,
        **interpret,
        "HOME": str(home),
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": str(home / "mpl"),
        "IPYTHONDIR": str(home / "ipython"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTER_DATA_DIR": str(home / "data"),
        "TMPDIR": "/tmp" if sandboxed else str(home / "tmp"),
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "OMP_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }


def start_arguments(info: sandbox.SandboxInfo, limits: sandbox.Limits, cwd: Path) -> dict:
    """How the kernel process starts: in its work folder, and, where there is no prlimit to set the limits, with
    them set by the starting process itself."""
    if shutil.which("prlimit") is not None:
        return {"cwd": str(cwd)}

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

    return {"cwd": str(cwd), "preexec_fn": preexec}


class SandboxedRun:
    """One notebook run: the kernel (started again after a crash, with the earlier cells replayed), the status of
    each cell, and why it stopped early, if it did."""

    def __init__(self, run_nb: NotebookNode, scratch: Path, job: Job, records: RecordCollector | None = None):
        self.run_nb, self.scratch, self.limits, self.records = run_nb, scratch, job.limits, records
        self.info = sandbox.SandboxInfo(job.sandbox.tool, job.sandbox.as_root, job.sandbox.drop_uid)
        self.uid = job.kernel_uid
        env = kernel_environment(scratch / "home", job.threads, self.info.active)
        env.update(output_cap.kernel_environment(self.limits.output_kb))
        factory = warm.current_for(scratch)
        if factory is not None and job.kernel_uid is not None:  # a warm kernel, forked for this submission
            self.argv = warm.kernel_command(factory, scratch, job.kernel_uid, env, self.limits)
        else:
            self.argv = sandbox.kernel_command(
                self.info, self.limits, scratch, job.kernel_uid, env, [Path(p) for p in job.hide]
            )
        if self.uid is not None:
            for path in [scratch, *scratch.rglob("*")]:
                os.lchown(path, self.uid, self.uid)
        self.start_kwargs = start_arguments(self.info, self.limits, scratch / "work")
        self.client_class = _make_client_class()
        self.timed_out: set[int] = set()
        self.errored: set[int] = set()
        self.truncated: set[int] = set()
        self.sizes: dict[int, int] = {}
        self.status = {i: "not_run" for i in range(len(run_nb.cells))}
        self.deadline = time.monotonic() + self.limits.timeout_s
        self.stopped: str | None = None
        self.start_failures: list[str] = []
        self.failed_starts = 0
        self.recovered: list[int] = []
        self.km, self.client = self.new_client(0)

    def new_client(self, incarnation: int | str) -> tuple[Any, Any]:
        """A kernel manager and nbclient client; a kernel started again after a crash gets new ones."""
        from jupyter_client.kernelspec import KernelSpec
        from jupyter_client.manager import AsyncKernelManager

        uid, scratch, limits = self.uid, self.scratch, self.limits

        class SandboxKernelManager(AsyncKernelManager):
            def write_connection_file(self, **kwargs):
                result = super().write_connection_file(**kwargs)
                if uid is not None:
                    os.chown(self.connection_file, uid, uid)
                return result

        km = SandboxKernelManager(
            transport="ipc",
            ip=str(scratch / f"k{incarnation}"),
            connection_file=str(scratch / f"kernel{incarnation}.json"),
        )
        km._kernel_spec = KernelSpec(
            argv=self.argv, display_name="grading sandbox", language="python", interrupt_mode="message", env={}
        )
        client = self.client_class(
            self.run_nb,
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
        client.timed_out, client.truncated, client._sizes = self.timed_out, self.truncated, self.sizes
        client.errored = self.errored
        return km, client

    async def start(self) -> None:
        t0 = time.monotonic()
        await self.client.async_start_new_kernel(**self.start_kwargs)
        await self.client.async_start_new_kernel_client()
        if os.environ.get("REVAD_DEBUG"):
            print(f"kernel start: {time.monotonic() - t0:.2f} s", file=sys.stderr, flush=True)

    async def cleanup_kernel(self) -> None:
        try:
            await asyncio.wait_for(self.client._async_cleanup_kernel(), timeout=15)
        except Exception:  # noqa: BLE001
            pass

    async def clean_up_failed_start(self) -> None:
        """Nothing of a failed start may linger into the next; a cleaned-up manager cannot start again."""
        self.failed_starts += 1
        try:
            await asyncio.wait_for(self.client._async_cleanup_kernel(), timeout=15)
        finally:
            sandbox.kill_uid(self.uid)
            self.km, self.client = self.new_client(f"s{self.failed_starts}")

    async def recover(self, crashed: int) -> bool:
        """A fresh kernel in the state the notebook had before cell `crashed`: the setup and every
        earlier cell that ran are run again (copies: their outputs are not kept), unprobed."""
        if len(self.recovered) >= MAX_RECOVERIES:
            return False
        self.recovered.append(crashed)
        await self.cleanup_kernel()
        sandbox.kill_uid(self.uid)
        self.km, self.client = self.new_client(len(self.recovered))
        cells = self.run_nb.cells
        try:
            await self.start()
            earlier = [i for i in range(crashed) if cells[i].cell_type == "code" and self.status[i] in ("ok", "error")]
            setup, rest = earlier[:1], earlier[1:]
            sources = (
                [cells[i].source for i in setup]
                + ["__revad_probe__.replaying = True"]
                + [cells[i].source for i in rest]
                + ["__revad_probe__.replaying = False"]
            )
            crashed_cell = cells[crashed]
            try:
                for source in sources:  # (nbclient stores the cell it ran at the index it is given: put it back)
                    await asyncio.wait_for(
                        self.client.async_execute_cell(nbformat.v4.new_code_cell(source), crashed),
                        timeout=max(1.0, self.deadline - time.monotonic()),
                    )
            finally:
                cells[crashed] = crashed_cell
            return await self.client.km.is_alive()
        except Exception as exc:  # noqa: BLE001 -- it crashed again, or ran out of time: stop here
            print(f"recovery after cell {crashed} failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            return False

    async def run_cell(self, index: int, cell: NotebookNode) -> str | None:
        """Run one code cell and set its status. Returns why the run stops here, or None to go on."""
        from nbclient.exceptions import CellTimeoutError, DeadKernelError

        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            return "deadline"
        self.client.current = index
        # the grader's own setup (importing torch and the checks) is not the learner's time
        setup = cell.metadata.get("revad", {}).get("role") == "setup"
        self.client.timeout = max(self.limits.cell_timeout_s, SETUP_TIMEOUT_S) if setup else self.limits.cell_timeout_s
        # a test cell's probe calls (hidden cases included) stay out of the kernel's input history (In, _ih, _i):
        # the learner's code reads that history as easily as its own variables
        store_history = self.records is None or index not in self.records.tests
        self.errored.discard(index)  # (a recovery replays earlier cells under this index)
        t0 = time.monotonic()
        try:
            await asyncio.wait_for(
                self.client.async_execute_cell(cell, index, store_history=store_history), timeout=remaining
            )
        except asyncio.TimeoutError:
            self.status[index] = "timeout"
            return "deadline"
        except DeadKernelError:
            self.status[index] = "died"
            return None if await self.recover(index) else "died"
        except CellTimeoutError:
            self.status[index] = "timeout"
            return None
        except Exception as exc:  # noqa: BLE001 -- a protocol error from a misbehaving kernel
            self.status[index] = "died"
            return f"died: {type(exc).__name__}"
        if os.environ.get("REVAD_DEBUG"):
            print(f"cell {index}: {time.monotonic() - t0:.2f} s", file=sys.stderr, flush=True)
        if index in self.client.timed_out:
            self.status[index] = "timeout"
        elif index in self.errored or any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
            self.status[index] = "error"
        else:
            self.status[index] = "ok"
        if self.status[index] == "ok" and not await self.client.km.is_alive():
            self.status[index] = "died"
            return None if await self.recover(index) else "died"
        return None

    async def run_all(self) -> None:
        if self.records is not None:
            self.records.start()
        try:
            self.start_failures.extend(await start_with_retries(self.start, self.clean_up_failed_start))
            if self.start_failures:
                print(f"kernel start retried: {self.start_failures}", file=sys.stderr, flush=True)
        except KernelStartFailed as exc:
            self.stopped = f"kernel_start: {exc}"
            return
        try:
            for index, cell in enumerate(self.run_nb.cells):
                if cell.cell_type != "code":
                    self.status[index] = "ok"
                elif cell.metadata.get("revad", {}).get("skip") == "measurement":
                    self.status[index] = "skipped"  # an unchanged measurement cell (grading/measurements.py)
                else:
                    self.stopped = await self.run_watched(index, cell)
                    if self.stopped:
                        break
        finally:
            await self.cleanup_kernel()
            if self.records is not None:
                self.records.finish()

    async def run_watched(self, index: int, cell: NotebookNode) -> str | None:
        """Run one code cell between two looks at the probe channel (grading/records.py)."""
        if self.records is None:
            return await self.run_cell(index, cell)
        self.records.before(index)
        try:
            return await self.run_cell(index, cell)
        finally:
            self.records.after(index)

    def execute(self) -> dict:
        try:
            asyncio.run(asyncio.wait_for(self.run_all(), timeout=self.limits.timeout_s + 200))
        except Exception as exc:  # noqa: BLE001
            self.stopped = self.stopped or f"deadline ({type(exc).__name__})"
        finally:
            try:
                manager = self.client.km or self.km
                if manager.provisioner and manager.provisioner.process:
                    manager.provisioner.process.kill()
            except Exception:  # noqa: BLE001
                pass
            sandbox.kill_uid(self.uid)
        return {
            "status": self.status,
            "stopped": self.stopped,
            "truncated": sorted(self.truncated),
            "recovered": [i for i in self.recovered if not self.stopped or self.status.get(i) == "died"],
            "kernel_start_failures": self.start_failures,
        }
