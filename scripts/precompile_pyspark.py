#!/usr/bin/env python3
"""Add bytecode to pyspark's zip archives so Spark's Python processes stop compiling pyspark.

Spark puts $SPARK_HOME/python/lib/pyspark.zip (and py4j-*-src.zip) first on the PYTHONPATH of
every Python process it starts (pyspark.daemon workers, python_streaming_source_runner, the
data source planners...). The zips ship only .py files and zipimport never writes bytecode, so
each of those processes compiles every pyspark module it imports from source, on every start.

This script rewrites each zip keeping every original entry and adding, next to each
``pkg/mod.py``, a ``pkg/mod.pyc`` (the legacy location zipimport looks for) compiled by the
running interpreter as an *unchecked* hash-based pyc (PEP 552): zipimport loads it without
comparing timestamps or hashing the source. The pyc's code filename is the path zipimport would
have given the source (``<abs zip path>/pkg/mod.py``), so tracebacks and pyspark's own
"is this frame inside pyspark" checks see the same names as before.

Safe across interpreters: a pyc whose magic number differs from the importing interpreter's
makes zipimport raise ImportError internally, which ``_get_module_code`` catches before trying
the next candidate, the ``.py`` entry (same code in CPython 3.8 through main).

Idempotent: a marker entry records the magic number and archive path; a zip already processed
for the running interpreter at that path is left untouched (not even rewritten). A zip processed
by another interpreter (or at another path) has the previously added entries replaced.

Run it with the interpreter Spark's workers use (PYSPARK_PYTHON), and not while Spark processes
from this installation are running: zipimport caches the archive's directory per process, so an
archive replaced under a live process breaks that process's later imports (as a pip reinstall
of pyspark would).

Usage: precompile_pyspark.py [ZIP ...]   (default: the zips in the installed pyspark's python/lib)
"""

from __future__ import annotations

import importlib.util
import json
import marshal
import os
import sys
import tempfile
import warnings
import zipfile
from pathlib import Path

MARKER = ".sparkcat-precompiled.json"
MARKER_VERSION = 1


def default_zips() -> list[Path]:
    """pyspark.zip and py4j-*-src.zip of the pyspark installed for this interpreter."""
    spec = importlib.util.find_spec("pyspark")  # locates without importing pyspark
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("precompile_pyspark: pyspark is not installed for " + sys.executable)
    lib = Path(list(spec.submodule_search_locations)[0]) / "python" / "lib"
    zips = sorted(lib.glob("pyspark.zip")) + sorted(lib.glob("py4j-*-src.zip"))
    if not zips:
        raise SystemExit(f"precompile_pyspark: no pyspark.zip / py4j-*-src.zip under {lib}")
    return zips


def _want_marker(archive: str) -> dict:
    return {
        "version": MARKER_VERSION,
        "magic": importlib.util.MAGIC_NUMBER.hex(),
        "archive": archive,
        "python": sys.version.split()[0],
    }


def _read_marker(zf: zipfile.ZipFile) -> dict | None:
    try:
        return json.loads(zf.read(MARKER))
    except (KeyError, ValueError):
        return None


def _is_current(marker: dict | None, want: dict) -> bool:
    return marker is not None and all(marker.get(k) == want[k] for k in ("version", "magic", "archive"))


def _pyc_bytes(source: bytes, code_filename: str) -> bytes:
    """An unchecked hash-based pyc (PEP 552) for source, like py_compile with UNCHECKED_HASH."""
    # zipimport normalises line endings before compiling; do the same so the code is identical.
    normalised = source.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    # optimize=0: keep docstrings and asserts whatever flags this script runs with (pyspark
    # manipulates __doc__); this is also what workers compile without -O.
    with warnings.catch_warnings():  # e.g. SyntaxWarning in pyspark's tests: not ours to report
        warnings.simplefilter("ignore")
        code = compile(normalised, code_filename, "exec", dont_inherit=True, optimize=0)
    flags = 0b01  # hash-based, check_source unset => never validated against the source
    return (
        importlib.util.MAGIC_NUMBER
        + flags.to_bytes(4, "little")
        + importlib.util.source_hash(source)
        + marshal.dumps(code)
    )


def precompile_zip(path: os.PathLike | str, *, quiet: bool = False) -> bool:
    """Add pycs to the zip at path. Returns True if it rewrote the file, False if already done."""
    path = Path(path)
    archive = os.path.abspath(path)  # what zipimport puts in front of entry names
    want = _want_marker(archive)
    with zipfile.ZipFile(path) as zin:
        old_marker = _read_marker(zin)
        if _is_current(old_marker, want):
            if not quiet:
                print(f"precompile_pyspark: {path} already has bytecode for Python "
                      f"{want['python']}", file=sys.stderr)
            return False
        # Entries this script added on an earlier run (other interpreter or other path).
        previously_added = set(old_marker.get("added", [])) if old_marker else set()
        originals = [i for i in zin.infolist()
                     if i.filename != MARKER and i.filename not in previously_added]
        names = {i.filename for i in originals}

        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
        added: list[str] = []
        failed: list[str] = []
        try:
            with os.fdopen(fd, "wb") as raw, zipfile.ZipFile(raw, "w") as zout:
                zout.comment = zin.comment
                for info in originals:
                    data = zin.read(info)
                    zout.writestr(info, data)
                    pyc_name = info.filename + "c"
                    if not info.filename.endswith(".py") or info.is_dir() or pyc_name in names:
                        continue  # not source, or the archive already ships its own pyc
                    code_filename = archive + os.sep + info.filename.replace("/", os.sep)
                    try:
                        pyc = _pyc_bytes(data, code_filename)
                    except (SyntaxError, ValueError) as exc:  # leave it to the source at import
                        failed.append(f"{info.filename}: {exc}")
                        continue
                    pyc_info = zipfile.ZipInfo(pyc_name, date_time=info.date_time)
                    pyc_info.compress_type = info.compress_type
                    pyc_info.external_attr = info.external_attr
                    zout.writestr(pyc_info, pyc)
                    added.append(pyc_name)
                marker = dict(want, added=added)
                zout.writestr(zipfile.ZipInfo(MARKER, date_time=(1980, 1, 1, 0, 0, 0)),
                              json.dumps(marker, indent=0))
                raw.flush()
                os.fsync(raw.fileno())
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise
    if not quiet:
        print(f"precompile_pyspark: {path}: added {len(added)} .pyc for Python {want['python']}"
              + (f", {len(failed)} sources left uncompiled" if failed else ""), file=sys.stderr)
        for line in failed[:10]:
            print(f"  {line}", file=sys.stderr)
    return True


def main(argv: list[str]) -> int:
    zips = [Path(a) for a in argv] or default_zips()
    for z in zips:
        precompile_zip(z)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
