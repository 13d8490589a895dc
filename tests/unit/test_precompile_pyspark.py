"""scripts/precompile_pyspark.py: adds unchecked-hash pycs to a zip so zipimport stops compiling."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "precompile_pyspark.py"


def _load_script():
    spec = importlib.util.spec_from_file_location("precompile_pyspark", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


precompile = _load_script()

ENTRIES = {
    "tinypkg/": b"",
    "tinypkg/__init__.py": b"INIT = 'init'\n",
    "tinypkg/mod.py": b"VALUE = 42\r\n\r\ndef where():\r\n    return where.__code__.co_filename\r\n",
    "tinypkg/data.json": b'{"not": "python"}',
    "tinypkg/sub/__init__.py": b"",
    "tinypkg/sub/leaf.py": b"LEAF = 'leaf'\n",
}

# Prints what a fresh interpreter gets when importing tinypkg.mod from the zip alone.
PROBE = (
    "import json, sys; sys.path.insert(0, sys.argv[1]); import tinypkg.mod, tinypkg.sub.leaf; "
    "print(json.dumps({'value': tinypkg.mod.VALUE, 'file': tinypkg.mod.__file__, "
    "'init_file': sys.modules['tinypkg'].__file__, 'leaf_file': tinypkg.sub.leaf.__file__, "
    "'co_filename': tinypkg.mod.where()}))"
)


def _import_from(zip_path: Path) -> dict:
    out = subprocess.run(
        [sys.executable, "-I", "-c", PROBE, str(zip_path)],
        capture_output=True, text=True, check=True,
    )
    return json.loads(out.stdout)


def _write_zip(path: Path, entries: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)


def _rewrite(path: Path, replace: dict[str, bytes]) -> None:
    """Copy of the zip at path with some entries' contents replaced (names and order kept)."""
    with zipfile.ZipFile(path) as zin:
        items = [(info, replace.get(info.filename, zin.read(info))) for info in zin.infolist()]
    with zipfile.ZipFile(path, "w") as zout:
        for info, data in items:
            zout.writestr(info, data)


def _contents(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        assert len(names) == len(set(names)), "duplicate entries"
        return {name: zf.read(name) for name in names}


@pytest.fixture
def tiny_zip(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.zip"
    _write_zip(path, ENTRIES)
    return path


def test_adds_unchecked_hash_pycs_and_keeps_every_entry(tiny_zip: Path) -> None:
    assert precompile.precompile_zip(tiny_zip, quiet=True) is True

    contents = _contents(tiny_zip)
    for name, data in ENTRIES.items():
        assert contents[name] == data
    pycs = {n for n in contents if n.endswith(".pyc")}
    assert pycs == {"tinypkg/__init__.pyc", "tinypkg/mod.pyc",
                    "tinypkg/sub/__init__.pyc", "tinypkg/sub/leaf.pyc"}
    for name in pycs:
        header = contents[name][:16]
        assert header[:4] == importlib.util.MAGIC_NUMBER
        assert int.from_bytes(header[4:8], "little") == 0b01  # hash-based, unchecked
        assert header[8:16] == importlib.util.source_hash(contents[name[:-1]])
    assert set(contents) == set(ENTRIES) | pycs | {precompile.MARKER}


def test_import_uses_the_pyc_with_the_source_filename(tiny_zip: Path) -> None:
    precompile.precompile_zip(tiny_zip, quiet=True)

    got = _import_from(tiny_zip)
    assert got["value"] == 42
    assert got["file"].endswith("tinypkg/mod.pyc")
    assert got["init_file"].endswith("tinypkg/__init__.pyc")
    assert got["leaf_file"].endswith("tinypkg/sub/leaf.pyc")
    # The same code filename zipimport gives a module it compiles from the source.
    assert got["co_filename"] == os.path.join(os.path.abspath(tiny_zip), "tinypkg", "mod.py")


def test_pyc_is_used_even_when_the_source_no_longer_compiles(tiny_zip: Path) -> None:
    broken = {"tinypkg/mod.py": b"def broken(:\n"}
    # Control: without bytecode the broken source is what gets imported, and it fails.
    _rewrite(tiny_zip, broken)
    with pytest.raises(subprocess.CalledProcessError) as failed:
        _import_from(tiny_zip)
    assert "SyntaxError" in failed.value.stderr

    _rewrite(tiny_zip, {"tinypkg/mod.py": ENTRIES["tinypkg/mod.py"]})
    precompile.precompile_zip(tiny_zip, quiet=True)
    _rewrite(tiny_zip, broken)  # the pyc is unchecked: its source is never looked at
    assert _import_from(tiny_zip)["value"] == 42


def test_second_run_leaves_the_file_untouched(tiny_zip: Path) -> None:
    precompile.precompile_zip(tiny_zip, quiet=True)
    before = (hashlib.sha256(tiny_zip.read_bytes()).hexdigest(), tiny_zip.stat().st_mtime_ns,
              tiny_zip.stat().st_ino)

    assert precompile.precompile_zip(tiny_zip, quiet=True) is False

    after = (hashlib.sha256(tiny_zip.read_bytes()).hexdigest(), tiny_zip.stat().st_mtime_ns,
             tiny_zip.stat().st_ino)
    assert after == before
    assert not [p for p in tiny_zip.parent.iterdir() if p.name != tiny_zip.name]  # no temp left


def test_pyc_from_another_python_falls_back_to_source_and_is_replaced(tiny_zip: Path) -> None:
    precompile.precompile_zip(tiny_zip, quiet=True)
    # Pretend another interpreter processed this zip: foreign magic in the pycs and the marker.
    contents = _contents(tiny_zip)
    foreign_magic = bytes([importlib.util.MAGIC_NUMBER[0] ^ 0xFF]) + importlib.util.MAGIC_NUMBER[1:]
    replace = {n: foreign_magic + d[4:] for n, d in contents.items() if n.endswith(".pyc")}
    marker = json.loads(contents[precompile.MARKER])
    replace[precompile.MARKER] = json.dumps(dict(marker, magic=foreign_magic.hex())).encode()
    _rewrite(tiny_zip, replace)

    got = _import_from(tiny_zip)  # zipimport rejects the foreign pyc and compiles the .py
    assert got["value"] == 42
    assert got["file"].endswith("tinypkg/mod.py")
    assert got["init_file"].endswith("tinypkg/__init__.py")

    assert precompile.precompile_zip(tiny_zip, quiet=True) is True  # reprocessed, no duplicates
    contents = _contents(tiny_zip)
    assert all(d[:4] == importlib.util.MAGIC_NUMBER for n, d in contents.items() if n.endswith(".pyc"))
    assert _import_from(tiny_zip)["file"].endswith("tinypkg/mod.pyc")


def test_leaves_sources_that_do_not_compile_to_the_importer(tmp_path: Path) -> None:
    path = tmp_path / "bad.zip"
    _write_zip(path, {"okmod.py": b"OK = 1\n", "badmod.py": b"def broken(:\n"})

    assert precompile.precompile_zip(path, quiet=True) is True

    assert set(_contents(path)) == {"okmod.py", "okmod.pyc", "badmod.py", precompile.MARKER}
