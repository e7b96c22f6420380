"""A run directory's ownership and its files read back, with no torch.

    LOCK         ``.pinnspec.lock``: "PID HOST" of the process writing the run; taken with O_CREAT | O_EXCL
                 (`RunLock`), removed when that process ends (normally, by an exception, SIGINT or SIGTERM), and
                 taken over once that process is gone (a lock of this host whose pid no longer runs)
    MANIFEST     ``manifest.json``: {"files": [...]} the paths (relative, "/"-separated) the run wrote, rewritten
                 atomically as files are added (`record_files`); ``--overwrite`` removes these and nothing else
    ``.tmp-*``   a file being written (`pinnspec._files.atomic_write_bytes`); one left behind by a killed run is
                 removed when the run resumes (`remove_temporary`)

`read_result`, `read_config` and `run_dir_error` turn an unreadable, missing or mismatched file into a
`RunFileError` whose message is one line naming the file and what is wrong with it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import socket
import time
from typing import Iterable

from ._files import read_json, write_json

LOCK, MANIFEST, TEMPORARY_PREFIX = ".pinnspec.lock", "manifest.json", ".tmp-"
#: the files a run wrote before runs kept a manifest (pinnspec 0.x): an older run directory is recognised by
#: its result.json and config.pinn, and ``--overwrite`` then removes these names (plots: the three PNGs
#: ``pinnspec plot`` writes), nothing else
LEGACY_RUN_FILES = ("config.pinn", "result.json", "history.csv", "checkpoint.pt", "predictions.npz",
                    "plots/losses.png", "plots/conflicts.png", "plots/solution.png")


class RunFileError(ValueError):
    """A run directory's file that is missing, unreadable or does not match the run (one line: the file, what
    is wrong)."""


class RunDirLocked(ValueError):
    """Another process is writing the run directory."""


def run_dir_error(path: str, what: str) -> RunFileError:
    return RunFileError(f"{path}: error: {what}")


def require_run_dir(run_dir: str) -> str:
    """``run_dir`` itself, checked to be a directory."""
    if not os.path.exists(run_dir):
        raise run_dir_error(run_dir, "no such directory")
    if not os.path.isdir(run_dir):
        raise run_dir_error(run_dir, "not a directory (expected a run directory)")
    return run_dir


def run_file(run_dir: str, name: str) -> str:
    """The path of ``name`` in the run directory; a `RunFileError` when the directory or the file is missing."""
    path = os.path.join(require_run_dir(run_dir), name)
    if not os.path.isfile(path):
        raise run_dir_error(path, f"missing: {run_dir} holds no {name} (is it a run directory, and is the run's "
                                  f"{name} still there?)")
    return path


def read_result(run_dir: str) -> dict:
    """result.json as a dict; a `RunFileError` when it is missing, not JSON or not a run's result."""
    path = run_file(run_dir, "result.json")
    try:
        result = read_json(path)
    except UnicodeDecodeError:
        raise run_dir_error(path, "not a result pinnspec wrote: it is not UTF-8 text") from None
    except json.JSONDecodeError as err:
        raise run_dir_error(path, f"not a result pinnspec wrote: not JSON (line {err.lineno} column {err.colno}: "
                                  f"{err.msg})") from None
    except OSError as err:
        raise run_dir_error(path, f"cannot read it ({err.strerror})") from None
    if not isinstance(result, dict) or not isinstance(result.get("status"), str):
        raise run_dir_error(path, "not a result pinnspec wrote: a JSON object with a 'status' was expected")
    return result


def read_config(run_dir: str) -> str:
    """config.pinn's text; a `RunFileError` when it is missing or unreadable."""
    path = run_file(run_dir, "config.pinn")
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except UnicodeDecodeError:
        raise run_dir_error(path, "not a spec: it is not UTF-8 text") from None
    except OSError as err:
        raise run_dir_error(path, f"cannot read it ({err.strerror})") from None


def remove_temporary(run_dir: str) -> list[str]:
    """Remove the ``.tmp-*`` files a run killed while writing left in ``run_dir`` (and its plots/); call it
    holding the directory's lock.  Returns the names removed."""
    removed = []
    for folder in (run_dir, os.path.join(run_dir, "plots")):
        with contextlib.suppress(OSError):
            for name in sorted(os.listdir(folder)):
                path = os.path.join(folder, name)
                if name.startswith(TEMPORARY_PREFIX) and os.path.isfile(path) and not os.path.islink(path):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(path)
                    removed.append(os.path.relpath(path, run_dir))
    return removed


# ---------------------------------------------------------------------- the manifest
def read_manifest(run_dir: str) -> list[str] | None:
    """The files the run in ``run_dir`` recorded as its own; None without a manifest (or an unreadable one)."""
    try:
        data = read_json(os.path.join(run_dir, MANIFEST))
    except (OSError, ValueError):
        return None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        return None
    return files


def record_files(run_dir: str, names: Iterable[str]) -> None:
    """Add ``names`` (paths relative to ``run_dir``) to its manifest, written atomically (the manifest lists
    itself: it is the run's too)."""
    known = read_manifest(run_dir) or []
    new = [n for n in dict.fromkeys(names) if n not in known and n != MANIFEST]
    if new or not known:
        write_json(os.path.join(run_dir, MANIFEST), {"files": [*known, *new] if known else [MANIFEST, *new]})


def holds_run(run_dir: str) -> bool:
    """Whether ``run_dir`` holds a run: a manifest, or (a run written before manifests) a result.json that is a
    run's result beside a config.pinn."""
    if read_manifest(run_dir) is not None:
        return True
    try:
        read_result(run_dir)
    except RunFileError:
        return False
    return os.path.isfile(os.path.join(run_dir, "config.pinn"))


def remove_run_files(run_dir: str) -> list[str]:
    """Remove the files of the run in ``run_dir`` (`holds_run` must be true): those of its manifest, or
    `LEGACY_RUN_FILES` for a run without one; then the folders among them left empty.  Nothing outside the
    directory is touched (a manifest's ".." or absolute entries are skipped).  Returns the paths removed."""
    names = read_manifest(run_dir)
    names = [n for n in (names if names is not None else LEGACY_RUN_FILES) if n != MANIFEST] + [MANIFEST]
    root = os.path.realpath(run_dir)
    removed, folders = [], set()
    for name in names:
        path = os.path.realpath(os.path.join(run_dir, name))
        if os.path.isabs(name) or os.path.commonpath([root, path]) != root or path == root:
            continue
        target = os.path.join(run_dir, name)
        if os.path.isfile(target) or os.path.islink(target):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(target)
            removed.append(name)
            folders.add(os.path.dirname(name))
    for folder in sorted(folders - {""}, key=len, reverse=True):
        with contextlib.suppress(OSError):  # not empty: a file of the user's is there
            os.rmdir(os.path.join(run_dir, folder))
    return removed


# ---------------------------------------------------------------------- the lock
#: an empty lock older than this (seconds) was left by a process killed as it took the lock
EMPTY_LOCK_S = 10.0


def _age(path: str) -> float:
    try:
        return time.time() - os.stat(path).st_mtime
    except OSError:
        return 0.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


class RunLock:
    """``with RunLock(run_dir):`` this process alone writes ``run_dir`` (created if missing) inside the block.

    The lock file is created with O_CREAT | O_EXCL and holds "PID HOST"; it is removed when the block ends,
    by an exception or a SIGTERM too (turned into SystemExit inside the block, on the main thread).  A lock
    whose process no longer runs on this host is taken over; a live one raises `RunDirLocked` naming its pid."""

    def __init__(self, run_dir: str):
        self.run_dir = os.fspath(run_dir)
        self.path = os.path.join(self.run_dir, LOCK)
        self.created_dir = False
        self._previous_sigterm = None
        self._held = False

    def acquire(self) -> "RunLock":
        if not os.path.isdir(self.run_dir):
            if os.path.exists(self.run_dir):
                raise RunDirLocked(f"error: {self.run_dir} is a file, not a directory; choose another --out DIR")
            os.makedirs(self.run_dir, exist_ok=True)
            self.created_dir = True
        for _ in range(3):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                self._take_over_or_refuse()
                continue
            with os.fdopen(fd, "w", encoding="ascii") as fh:
                fh.write(f"{os.getpid()} {socket.gethostname()}\n")
            self._held = True
            self._catch_sigterm()
            return self
        raise RunDirLocked(f"{self.path}: error: another process took this run directory's lock as this one "
                           "tried to; try again")

    def _take_over_or_refuse(self) -> None:
        """Remove a stale lock (its process is gone); raise `RunDirLocked` for a live one."""
        try:
            with open(self.path, encoding="ascii", errors="replace") as fh:
                text = fh.read()
        except FileNotFoundError:
            return  # released meanwhile
        pid_text, _, host = text.strip().partition(" ")
        if not text.strip() and _age(self.path) > EMPTY_LOCK_S:  # its writer died between creating and writing it
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
            return
        if not pid_text.isdigit():  # being written this instant, or not a lock pinnspec wrote
            raise RunDirLocked(f"{self.path}: error: {self.run_dir} is locked by a process that did not say "
                               f"which (the lock holds {text.strip()[:40]!r}); if no run writes there, delete "
                               f"{self.path}")
        pid = int(pid_text)
        if host == socket.gethostname() and not _alive(pid):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)  # stale: its process is gone
            return
        where = "" if host == socket.gethostname() else f" on host {host}"
        raise RunDirLocked(f"{self.path}: error: {self.run_dir} is in use by a run of process {pid}{where}; wait "
                           f"for it to end, choose another --out DIR, or, if process {pid} is not a run, delete "
                           f"{self.path}")

    def _catch_sigterm(self) -> None:
        def stop(signum, frame):
            raise SystemExit(128 + signum)

        try:
            self._previous_sigterm = signal.signal(signal.SIGTERM, stop)
        except ValueError:  # not the main thread: the caller's thread owns the signals
            self._previous_sigterm = None

    def release(self) -> None:
        if not self._held:
            return
        self._held = False
        if self._previous_sigterm is not None:
            signal.signal(signal.SIGTERM, self._previous_sigterm)
            self._previous_sigterm = None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        if self.created_dir:  # a run that wrote nothing leaves no empty folder
            with contextlib.suppress(OSError):
                os.rmdir(self.run_dir)

    def __enter__(self) -> "RunLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


@contextlib.contextmanager
def resuming(run_dir: str):
    """``with resuming(run_dir):`` the existing run directory locked (`RunLock`), the ``.tmp-*`` files a run
    killed while writing left there removed."""
    with RunLock(require_run_dir(run_dir)) as lock:
        remove_temporary(run_dir)
        yield lock


def directory_entries(run_dir: str) -> list[str]:
    """The entries of ``run_dir`` that are not its lock (sorted)."""
    try:
        return sorted(name for name in os.listdir(run_dir) if name != LOCK)
    except OSError as err:
        if err.errno == errno.ENOENT:
            return []
        raise
