"""A warm start for the ``defsent`` processes of the tests of what commands do (tests/conftest.py's ``run_warm``).

Each ``defsent`` process spends ~8 s of a 2-core CI machine importing torch and transformers before the command
starts (``python -X importtime``: torch 2.8 s, ``transformers.modeling_utils`` 5 s more), and a script chain of
the examples runs ten to twenty of them: most of the suite's time was those imports. Here one server process
imports them once; each ``defsent`` the scripts run is a stand-in (:data:`SHIM`, the standard library only)
that hands the server its arguments, working folder, environment, umask, file-size limit and its stdin/stdout/stderr
(the file descriptors themselves); the server forks a process from its already-imported state, which runs the real
command line (``defsent_cli.cli.run``) with them, and the stand-in exits with its exit status (or its signal).

The stand-in ``warm-python`` does the same for ``python SCRIPT ARGS`` and ``python -m MODULE ARGS``: the runs
killed mid-step (tests/kill_after_step.py) and torchrun's launcher, whose ranks are stand-ins too.

What differs from a fresh process is what was settled at import: the hash seed, and libgomp's
``OMP_NUM_THREADS`` (set through ``torch.set_num_threads`` instead, to the same effect on torch's threads). The
tests of the process itself (signals and interrupts, a closed stdout, the README's quickstart, ``--help``'s
imports) start the installed ``defsent`` as users do.

The server is single-threaded and forks a handler per request; the handler forks the command, waits for it and
reports, so the server never runs a thread or a parallel torch op (a fork after one is unsafe).

``python tests/warm_defsent.py serve SOCKET`` runs the server (tests/conftest.py's ``warm_defsent`` fixture).
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys

SOCKET_ENV = "DEFSENT_WARM_SOCKET"

#: Environment variables read when a library is imported or loaded (the Hugging Face cache and offline switches,
#: Python's own, thread pools, the loader): a command whose values differ from the server's runs as a fresh
#: process. ``OMP_NUM_THREADS`` is carried instead (:func:`_command`). Not ``TORCH*``: torchrun gives each rank
#: its ``TORCHELASTIC_*`` variables, and torch sets ``TORCHINDUCTOR_CACHE_DIR`` itself when a module imports it.
SETTLED = ("HF_", "HUGGINGFACE_", "TRANSFORMERS_", "PYTHON", "OMP_", "KMP_", "MKL_", "LD_")

#: What importing the package set in the environment (``os.environ.setdefault`` at import): set again in each
#: command, whose environment is the stand-in's.
_SET_AT_IMPORT: dict[str, str] = {}

#: The stand-ins: ``defsent`` (the command line) and ``warm-python`` (``python SCRIPT ARGS`` or ``python -m
#: MODULE ARGS``: a test's script such as tests/kill_after_step.py, torchrun's launcher). Each connects, sends
#: its request and its three standard descriptors, relays signals to the command, exits as the command did.
SHIM = r"""#!{python} -S
import json, os, resource, signal, socket, sys
settled = {{k: v for k, v in os.environ.items() if k.startswith({prefixes!r}) and k != "OMP_NUM_THREADS"}}
settled = {{**{imported!r}, **settled}}  # what importing the libraries sets (a fresh process sets it too)
if settled != {settled!r}:  # read at import, and not as the server read them: a fresh process
    with open({log!r}, "a") as log:  # which variables, for whoever wonders why a test was slow
        changed = sorted(k for k in set(settled) | set({settled!r}) if settled.get(k) != {settled!r}.get(k))
        print(*changed, *sys.argv[1:3], file=log)
    os.execv({python!r}, [{python!r}, *{fresh!r}, *sys.argv[1:]])
request = {{"kind": {kind!r}, "argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ)}}
request["umask"] = os.umask(0o022)
request["fsize"] = resource.getrlimit(resource.RLIMIT_FSIZE)  # a full disk, as tests/test_bad_input.py makes one
os.umask(request["umask"])
conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
conn.connect(os.environ["{env}"])
socket.send_fds(conn, [json.dumps(request).encode() + b"\n"], [0, 1, 2])
reply = conn.makefile("r")
pid = int(reply.readline())
for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(sig, lambda number, frame: os.kill(pid, number))
kind, value = reply.readline().split()
if kind == "signal":
    if int(value) != signal.SIGKILL:  # SIGKILL's disposition cannot be set (it is always the default)
        signal.signal(int(value), signal.SIG_DFL)
    os.kill(os.getpid(), int(value))
sys.exit(int(value))
"""


#: The file in the stand-ins' folder where each command sent fresh writes the variables that differed.
FRESH_LOG = "fresh.log"

#: Each stand-in's name, and what it runs when it must run fresh: ``python FRESH ARGS``.
STAND_INS = {"defsent": ["-m", "defsent_cli"], "warm-python": []}


def write_shim(folder, imported: dict[str, str]) -> None:
    """``folder``/defsent and ``folder``/warm-python, the stand-ins (they find the server through
    :data:`SOCKET_ENV`); written by the process that starts the server, with that process's :data:`SETTLED`
    variables, which the server has, and ``imported``: what importing the libraries set in the server's environment
    (:data:`IMPORTED`; scikit-learn sets ``KMP_*``), which a fresh process sets as it imports them, so an
    environment taken before such an import is the same one."""
    from pathlib import Path

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    imported = {k: v for k, v in imported.items() if k.startswith(SETTLED)}
    settled = {k: v for k, v in os.environ.items() if k.startswith(SETTLED) and k != "OMP_NUM_THREADS"}
    settled = {**imported, **settled}
    for kind, fresh in STAND_INS.items():
        shim = folder / kind
        shim.write_text(
            SHIM.format(
                python=sys.executable, env=SOCKET_ENV, prefixes=SETTLED, settled=settled, imported=imported,
                kind=kind, fresh=fresh, log=str(folder / FRESH_LOG),
            )
        )  # fmt: skip
        shim.chmod(0o755)


#: The file beside the socket where the server writes :data:`_SET_AT_IMPORT` (JSON) before it listens.
IMPORTED = "imported.json"


def _preload() -> None:
    """What every command imports, imported once (the point of the server)."""
    import h5py  # noqa: F401
    import numpy  # noqa: F401
    import sklearn  # noqa: F401  (sets KMP_* in the environment)
    import torch  # noqa: F401
    import torch.distributed.run  # noqa: F401  (torchrun's launcher)
    import transformers.modeling_utils  # noqa: F401
    from transformers import BertModel, RobertaModel  # noqa: F401

    import defsent_cli.banks.entry_bank  # noqa: F401
    import defsent_cli.cli  # noqa: F401
    import defsent_cli.encoder.encode  # noqa: F401
    import defsent_cli.training.loop  # noqa: F401


def _command(request: dict, fds: list[int]) -> None:
    """In the forked command process: take the stand-in's descriptors, folder, environment and umask, then run
    the command line as the script's last statement, so the process ends as a fresh one does (its exit status,
    an uncaught exception's traceback and exit 1, the interpreter's shutdown and ``atexit`` handlers)."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):  # SIGPIPE stays ignored, as Python sets it
        signal.signal(number, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    for name, value in _SET_AT_IMPORT.items():
        os.environ.setdefault(name, value)
    os.umask(request["umask"])
    import resource

    resource.setrlimit(resource.RLIMIT_FSIZE, tuple(request["fsize"]))
    threads = request["env"].get("OMP_NUM_THREADS", "")
    if threads.isdigit():  # libgomp read it when the server started: set as a fresh process would have it
        import torch

        torch.set_num_threads(int(threads))
    argv = request["argv"]
    if request["kind"] == "defsent":
        sys.argv = ["defsent", *argv]
        from defsent_cli.cli import run

        run()
        return
    import runpy

    if argv[:1] == ["-m"]:  # python -m MODULE ARGS: the folder first on sys.path, as python puts it
        sys.argv, sys.path[0] = [argv[1], *argv[2:]], os.getcwd()
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:  # python SCRIPT ARGS: the script's folder first on sys.path
        sys.argv, sys.path[0] = list(argv), os.path.dirname(os.path.abspath(argv[0]))
        runpy.run_path(argv[0], run_name="__main__")


def _handle(conn: socket.socket) -> tuple[dict, list[int]]:
    """In the forked handler: read the request, fork the command (which returns it and its descriptors), report
    the command's pid and then how it ended; if the stand-in goes first, kill the command's process group. The
    handler itself never returns."""
    message, fds, _, _ = socket.recv_fds(conn, 1 << 22, 3)
    data = message
    while not data.endswith(b"\n"):
        more = conn.recv(1 << 22)
        if not more:
            os._exit(1)
        data += more
    request = json.loads(data)
    pid = os.fork()
    if pid == 0:
        os.setpgid(0, 0)
        conn.close()
        return request, fds
    os.setpgid(pid, pid)  # the command and all it starts (torchrun's ranks) in a group of their own
    for fd in fds:
        os.close(fd)
    conn.sendall(f"{pid}\n".encode())
    ended = os.pidfd_open(pid)
    while select.select([conn, ended], [], [])[0] == [conn]:
        if not conn.recv(1):  # the stand-in was killed (a test's deadline): so is its command, and all it started
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            break
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        conn.sendall(f"signal {os.WTERMSIG(status)}\n".encode())
    else:
        conn.sendall(f"exit {os.WEXITSTATUS(status)}\n".encode())
    conn.close()
    os._exit(0)


def serve(socket_path: str) -> tuple[dict, list[int]]:
    """Import once, then fork a handler per connection until the process that started the server is gone; in a
    forked command process, return its request and descriptors. The socket appears when the server is ready."""
    before = dict(os.environ)
    _preload()
    _SET_AT_IMPORT.update({k: v for k, v in os.environ.items() if k not in before})
    import gc

    # the imported objects out of the collector's reach: a command's collections and its shutdown then do not
    # write to (and so copy) every page it shares with the server; its exit went from 1.5 s to 0.5 s
    gc.freeze()
    sys.stdout.flush()
    sys.stderr.flush()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with open(os.path.join(os.path.dirname(socket_path), IMPORTED), "w") as out:
        json.dump(_SET_AT_IMPORT, out)
    listener.bind(socket_path + ".binding")
    os.rename(socket_path + ".binding", socket_path)  # ready only once bound and loaded
    listener.listen(16)
    listener.settimeout(1.0)
    parent = os.getppid()
    while os.getppid() == parent:  # the test process that started it is gone: so is the server
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            conn = None
        if conn is not None:
            conn.settimeout(None)
            if os.fork() == 0:
                listener.close()
                return _handle(conn)
            conn.close()
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass
    sys.exit(0)


if __name__ == "__main__":
    if sys.argv[1:2] != ["serve"] or len(sys.argv) != 3:
        sys.exit("usage: python tests/warm_defsent.py serve SOCKET")
    _command(*serve(sys.argv[2]))
