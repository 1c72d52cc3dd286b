"""The one way arthron writes files, and the guard that keeps a command off its own inputs.

Every writer (``.sto``/``.mot``, ``.trc``, ``.osim``, scale-set and marker-set XML) ends in
:func:`atomic_write`:

* the target is resolved first (symlinks and ``..`` followed, so ``nonexistent/../M.osim`` is
  ``M.osim``) and checked before anything is created: not one of the files the running command
  has read (:func:`input_guard`; same resolved path or same file identity, ``st_dev`` +
  ``st_ino``, which also catches hard links), not an existing folder, device or other
  non-regular file, a file name the file system accepts;
* missing folders of the resolved target are created (only those);
* the bytes go to a temporary file in the target's folder (``.<name>.arthron-<pid>-<random>.tmp``),
  flushed and fsynced, then renamed over the target (``os.replace``, atomic on POSIX and
  Windows): the final path holds the old file or the whole new one, never a part; on any
  failure (disk full, a signal) the temporary file is removed;
* the new file gets the usual permissions (``0o666`` minus the process umask), not the
  ``0o600`` of a bare temporary file;
* temporary files left in that folder by a run that was killed (its process id no longer runs)
  are removed.

Several files written inside one :func:`output_group` are all staged first and renamed only
when every one of them is written whole: the group leaves all new files, or none when a file
fails to stage; if a rename itself fails, the error names the files already replaced and the
ones that are stale (old or missing). A group's staged files are fsynced together when it ends
(side by side, so that they share the file system's journal commit), every one before the
first rename; a failed fsync removes them all and renames nothing.

All errors are :class:`arthron.errors.DataFileError` naming the file (one line at the CLI).
"""
from __future__ import annotations

import contextlib
import contextvars
import errno
import os
import re
import stat
from pathlib import Path

from ..errors import DataFileError, OptionError

__all__ = ["output_path", "atomic_write", "output_group", "input_guard", "note_input", "guarded_inputs",
           "check_output", "resolve_output", "make_output_folder", "check_output_dir", "make_output_dir"]

_TMP_RE = re.compile(r"^\..+\.arthron-(\d+)-[0-9a-f]+\.tmp$")


def _umask() -> int:
    try:   # Linux: read without changing it
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    m = os.umask(0o022)
    os.umask(m)
    return m


# --------------------------------------------------------------------------------------
# the inputs of the running command
# --------------------------------------------------------------------------------------
_INPUTS: contextvars.ContextVar = contextvars.ContextVar("arthron_inputs", default=None)
#: True while a command-line command runs (its outermost :func:`input_guard` said so): the
#: messages then say "of this command"; a library call's say neither.
_COMMAND: contextvars.ContextVar = contextvars.ContextVar("arthron_command", default=False)


def _of_command() -> str:
    """" of this command" inside a command-line command, "" in a library call."""
    return " of this command" if _COMMAND.get() else ""


def _identity(p: Path):
    try:
        st = os.stat(p)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


@contextlib.contextmanager
def input_guard(inputs=(), *, command: bool = False):
    """Within this context every file an arthron reader reads (and each of ``inputs``) is
    remembered, and :func:`atomic_write` refuses to write onto any of them. Nested guards share
    the outer one's list. ``command``: the guard is a command-line command's (``arthron.cli``),
    whose messages say "an input of this command" (a library call's say "an input").
    Yields the list of (resolved path, identity) pairs."""
    outer = _INPUTS.get()
    if outer is not None:
        for p in inputs:
            note_input(p)
        yield outer
        return
    lst: list = []
    token = _INPUTS.set(lst)
    ctoken = _COMMAND.set(bool(command))
    try:
        for p in inputs:
            note_input(p)
        yield lst
    finally:
        _COMMAND.reset(ctoken)
        _INPUTS.reset(token)


def note_input(path) -> None:
    """Record ``path`` as an input of the running command (no-op outside :func:`input_guard`)."""
    lst = _INPUTS.get()
    if lst is None or path is None:
        return
    try:
        p = Path(path).resolve()
    except (OSError, RuntimeError, ValueError):
        return
    lst.append((p, _identity(p)))


def guarded_inputs() -> list:
    """The resolved paths of the inputs recorded so far (empty outside :func:`input_guard`)."""
    return [p for p, _ in (_INPUTS.get() or [])]


def resolve_output(path) -> Path:
    """The absolute, resolved target of an output name (``..`` and symlinks followed).

    Raises DataFileError for a name the file system cannot hold (too long) or an empty one."""
    return _resolve_output(path)[0]


#: what ``Path.exists`` takes for "not there" (the other errors of its ``stat`` propagate)
_NOT_THERE = (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP)


def _resolve_output(path):
    """:func:`resolve_output` and what it found on the way: (resolved Path, ``os.stat`` of it
    or None, the OSError of that stat or None). The target is stat'ed once, for the symbolic
    link loop check of ``Path.resolve`` (Python 3.10-3.12: a loop is a RuntimeError there), the
    file system's name length limit (``PC_NAME_MAX`` of the nearest existing folder) and the
    callers' checks."""
    if path is None or not str(path).strip():
        raise DataFileError("no output file name given")
    try:
        rs = os.path.realpath(os.path.expanduser(str(path)))
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise DataFileError("bad output file name: symbolic link loop", path) from None
        raise DataFileError(f"bad output file name: {e.strerror or e}", path) from None
    r = Path(rs)
    try:
        st, failed = os.stat(rs), None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise DataFileError("bad output file name: symbolic link loop", path) from None
        st, failed = None, e
    try:
        if st is not None:          # the nearest existing folder: itself or its folder
            folder = r if stat.S_ISDIR(st.st_mode) else r.parent
        elif failed.errno in _NOT_THERE:
            folder = _existing_ancestor(r.parent) if r.parent != r else Path("/")
        else:
            raise failed
        nmax = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):
        nmax = 255
    if len(os.fsencode(rs)) > nmax:      # (no part is longer than the whole)
        for part in r.parts:
            if len(os.fsencode(part)) > nmax:
                raise DataFileError(f"file name too long for the file system ({len(os.fsencode(part))} "
                                    f"bytes; at most {nmax})", _short(path))
    return r, st, failed


def _short(path) -> str:
    s = str(path)
    return s if len(s) <= 120 else s[:60] + " ... " + s[-40:]


def _existing_ancestor(p: Path) -> Path:
    """The nearest existing folder of ``p``: ``p`` itself, its folder or the first existing
    parent (walked up one parent at a time, from ``p``)."""
    a = p
    while True:
        if a.exists():
            return a if a.is_dir() else a.parent
        if a.parent == a:
            return Path("/")
        a = a.parent


def check_output(path, sources=()) -> Path:
    """Resolve an output name and check it before anything is written or created: not one of
    the command's inputs (:func:`input_guard`) nor of ``sources``, not a folder, a device or
    any other non-regular file, and no existing file where a folder is needed.

    Returns the resolved path. Raises DataFileError naming the file."""
    r, st, failed = _resolve_output(path)      # one stat of the target: its identity and kind
    ident = None if st is None else (st.st_dev, st.st_ino)
    entries = list(_INPUTS.get() or [])
    for s in sources:
        if s is not None:
            try:
                sp = Path(s).resolve()
            except (OSError, RuntimeError):
                continue
            entries.append((sp, _identity(sp)))
    for p, pid in entries:
        if r == p or (ident is not None and pid is not None and ident == pid):
            raise DataFileError(f"refusing to overwrite an input{_of_command()} ({p})", path)
    if failed is not None and not isinstance(failed, FileNotFoundError):   # its message
        st = _stat_output(r, path, "but the output path needs it to be a folder", "cannot write here")
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise DataFileError("the output is a folder; give a file name", path)
        if not stat.S_ISREG(st.st_mode):
            raise DataFileError("the output is not a regular file (a device, pipe or socket); "
                                "give a file name", path)
        return r            # an existing regular file: its folder is a folder
    # nothing there (ENOENT): its existing folders are folders (a file among them makes the stat
    # fail with ENOTDIR, named by _stat_output above)
    return r


def _stat_output(r: Path, shown, under_a_file: str, cannot: str):
    """``os.stat(r)`` of an output path, or None when nothing is there; DataFileError naming
    ``shown`` when a file stands where one of its folders goes ("'A' is a file, <under_a_file>")
    or the path cannot be examined ("<cannot>: <reason>")."""
    try:
        return os.stat(r)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        a = next((a for a in reversed(r.parents) if a.exists() and not a.is_dir()), r.parent)
        raise DataFileError(f"'{a}' is a file, {under_a_file}", shown) from None
    except OSError as e:
        raise DataFileError(f"{cannot}: {e.strerror or e}", shown) from None


def make_output_folder(path) -> Path:
    """Check an output (:func:`check_output`) and create the missing folders of its resolved
    path, and only those (``new/../x.sto`` creates nothing: it is ``x.sto``). What the tools do
    for ``-o`` and for a setup's ``results_directory``, as OpenSim's ``IO::makeDir``.

    Returns the resolved path. Raises DataFileError naming the file."""
    r = check_output(path)
    _mkdirs(r.parent, path)
    return r


def check_output_dir(folder) -> Path:
    """Resolve and check a folder that outputs go into (``-o DIR``, a results directory)
    before anything is computed or created: not an existing file, device or other non-folder,
    no file where one of its parent folders goes, a name the file system accepts, and the
    folder (or its nearest existing parent, where it will be created) writable by this process
    (``os.access``).

    Returns the resolved folder. Raises DataFileError naming ``folder`` as given (``'out.csv'
    is a file, not a folder``), never a file inside it that the tool would have written."""
    r, st, failed = _resolve_output(folder)
    if failed is not None and not isinstance(failed, FileNotFoundError):   # its message
        st = _stat_output(r, _short(folder), "not a folder: the output folder cannot go under it",
                          "cannot use this output folder")
    if st is not None and not stat.S_ISDIR(st.st_mode):
        kind = "a file" if stat.S_ISREG(st.st_mode) else "a device, pipe or socket"
        raise DataFileError(f"is {kind}, not a folder: give a folder for the outputs", _short(folder))
    a = r if st is not None else _existing_ancestor(r)     # where the files (or the new folders) go
    if not os.access(a, os.W_OK | os.X_OK):
        raise DataFileError(f"no permission to write in '{a}'", _short(folder))
    return r


def make_output_dir(folder) -> Path:
    """:func:`check_output_dir`, then create the folder and its missing parents.

    Returns the resolved folder. Raises DataFileError naming ``folder``."""
    r = check_output_dir(folder)
    _mkdirs(r, folder)
    return r


# --------------------------------------------------------------------------------------
# atomic writes
# --------------------------------------------------------------------------------------
_GROUP: contextvars.ContextVar = contextvars.ContextVar("arthron_output_group", default=None)
#: within an output group: the folders made and cleaned of stale temporary files already, and
#: the umask read once (the group's files staged side by side)
_GROUP_STAGING: contextvars.ContextVar = contextvars.ContextVar("arthron_group_staging", default=None)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _clean_stale_temps(folder: Path) -> None:
    """Remove temporary files of arthron runs that no longer run, in ``folder`` (POSIX: a
    process id that ``kill(pid, 0)`` finds gone; elsewhere nothing is removed, since Windows'
    ``os.kill`` would terminate the process)."""
    if os.name != "posix":
        return
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for n in names:
        m = _TMP_RE.match(n)
        if not m:
            continue
        pid = int(m.group(1))
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)
            continue                    # still running
        except ProcessLookupError:
            pass
        except (PermissionError, OSError):
            continue                    # someone else's live process
        try:
            os.unlink(folder / n)
        except OSError:
            pass


def _mkdirs(folder: Path, shown) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise DataFileError(f"'{folder}' exists and is not a folder", shown) from None
    except OSError as e:
        raise DataFileError(f"cannot create the folder {folder}: {e.strerror or e}", shown) from None


def _pieces(data):
    """bytes, str (UTF-8) or an iterable of them → an iterator of bytes."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        yield bytes(data)
    elif isinstance(data, str):
        yield data.encode("utf-8")
    else:
        for d in data:
            yield d.encode("utf-8") if isinstance(d, str) else bytes(d)


def _stage(target: Path, data, shown, sync: bool = True) -> Path:
    folder = target.parent
    staging = _GROUP_STAGING.get()
    if staging is None or folder not in staging["folders"]:
        _mkdirs(folder, shown)
        _clean_stale_temps(folder)
        if staging is not None:
            staging["folders"].add(folder)
    if staging is not None and staging["umask"] is None:
        staging["umask"] = _umask()
    umask = _umask() if staging is None else staging["umask"]
    name = target.name if len(target.name) < 120 else target.name[:120]
    tmp = folder / f".{name}.arthron-{os.getpid()}-{os.urandom(4).hex()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as e:
        raise DataFileError(f"cannot write file: {e.strerror or e}", shown) from None
    try:
        try:
            for piece in _pieces(data):
                _write_all(fd, piece)
            if sync:            # in a group: fsynced together when the group ends
                os.fsync(fd)
            os.fchmod(fd, 0o666 & ~umask) if hasattr(os, "fchmod") else None
        finally:
            os.close(fd)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError):
            what = "the disk is full" if e.errno == errno.ENOSPC else (e.strerror or str(e))
            raise DataFileError(f"cannot write file ({what}); nothing was written", shown) from None
        raise
    return tmp


def atomic_write(path, data, *, sources=()) -> Path:
    """Write ``data`` (str: UTF-8 with ``\\n`` line ends; bytes; or an iterable of either,
    streamed) to ``path`` whole or not at all (see the module text); ``sources``: more files it
    must not replace. Inside an
    :func:`output_group` the file is staged and renamed when the group ends.

    Returns the path as given. Raises DataFileError naming the file."""
    return write_checked(check_output(path, sources), path, data)


def write_checked(target: Path, path, data) -> Path:
    """:func:`atomic_write` of ``data`` to ``path`` whose check, ``target = check_output(path,
    sources)``, the caller has just made (a writer that checks its output before it formats
    the data, :func:`arthron.io.sto.write_sto`): the same writing, without checking again."""
    grp = _GROUP.get()
    if grp is not None:
        for t, _, shown in grp:
            if t == target:
                raise DataFileError(f"two outputs{_of_command()} have the same name", shown)
    tmp = _stage(target, data, path, sync=grp is None)
    if grp is not None:
        grp.append((target, tmp, path))
        return Path(path)
    try:
        os.replace(tmp, target)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise DataFileError(f"cannot write file: {e.strerror or e}", path) from None
    return Path(path)


def _fsync_path(tmp: Path) -> None:
    fd = os.open(tmp, os.O_WRONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sync_staged(staged: list) -> None:
    """fsync every staged file of a group before the first rename, the files side by side
    (one thread each but the last: concurrent fsyncs share the file system's journal commit,
    which is what an fsync waits for); on a failure all staged files are removed and
    DataFileError names the file (nothing was renamed).

    The threads are started with ``_thread.start_new_thread``, which returns at once
    (``threading.Thread.start`` waits until the new thread runs: one wait for the scheduler
    per file, before the next thread starts); each releases its lock when its fsync is done,
    and all are waited for."""
    errs: list = [None] * len(staged)

    def run(i):
        try:
            _fsync_path(staged[i][1])
        except OSError as e:
            errs[i] = e
    done = []
    if len(staged) > 1:
        import _thread

        def run_then_release(i, lock):
            try:
                run(i)
            finally:
                lock.release()
        for i in range(len(staged) - 1):
            lock = _thread.allocate_lock()
            lock.acquire()
            _thread.start_new_thread(run_then_release, (i, lock))
            done.append(lock)
    if staged:
        run(len(staged) - 1)
    for lock in done:
        lock.acquire()
    bad = [(e, staged[i][2]) for i, e in enumerate(errs) if e is not None]
    if bad:
        for _, tmp, _ in staged:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        e, shown = bad[0]
        what = "the disk is full" if e.errno == errno.ENOSPC else (e.strerror or str(e))
        raise DataFileError(f"cannot write file ({what}); nothing was written", shown) from None


@contextlib.contextmanager
def output_group():
    """Write several files as one: inside this context :func:`atomic_write` stages each file;
    on a clean exit all are renamed into place, on an exception none is (the staged files are
    removed). A rename that fails raises DataFileError naming the files written and the stale
    ones. Nested groups join the outer one."""
    if _GROUP.get() is not None:
        yield
        return
    staged: list = []
    token = _GROUP.set(staged)
    token_staging = _GROUP_STAGING.set({"folders": set(), "umask": None})
    try:
        yield
    except BaseException:
        for _, tmp, _ in staged:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    finally:
        _GROUP_STAGING.reset(token_staging)
        _GROUP.reset(token)
    _sync_staged(staged)
    done = []
    for i, (target, tmp, shown) in enumerate(staged):
        try:
            os.replace(tmp, target)
        except OSError as e:
            for _, t, _ in staged[i:]:
                with contextlib.suppress(OSError):
                    os.unlink(t)
            stale = [str(s) for _, _, s in staged[i:]]
            raise DataFileError(
                f"cannot write file ({e.strerror or e}); written: {', '.join(done) or 'none'}; "
                f"stale (old or missing): {', '.join(stale)}", shown) from None
        done.append(str(shown))


def output_path(path, writer: str, what: str) -> Path:
    """``path`` as a Path; OptionError when it is not a file name, e.g. the object to write given
    first (``write_osim(model, "out.osim")`` for ``write_osim("out.osim", model)``): the writers
    take the path first, as OpenSim's ``print(file)`` is called on the object."""
    if isinstance(path, (str, os.PathLike)):
        return Path(path)
    swapped = " (arguments swapped?)" if type(path).__name__ in ("Model", "Table", "MarkerTrial") else ""
    raise OptionError(f"{writer}(path, {what}): path must be a file name, got {type(path).__name__}{swapped}")
