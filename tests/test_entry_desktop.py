"""The bundle's desktop entry on a machine that lacks a system library Qt needs: one line
naming the library and the Debian packages to install, not a traceback."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _entry() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "entry_desktop", ROOT / "packaging" / "entry_desktop.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_missing_libgl_is_one_line_naming_the_packages() -> None:
    entry = _entry()
    exc = ImportError("libGL.so.1: cannot open shared object file: No such file or directory")
    message = entry.missing_library_message(exc)
    assert message is not None and "\n" not in message
    assert "libGL.so.1" in message
    assert "apt-get install" in message and "libgl1 libegl1" in message


def test_any_other_import_error_keeps_its_traceback() -> None:
    entry = _entry()
    assert entry.missing_library_message(ImportError("No module named 'boris_desktop.x'")) is None


def test_the_packages_are_those_setup_installs() -> None:
    setup = (ROOT / "packaging" / "setup.sh").read_text()
    qt_libs = re.search(r'^QT_LIBS="([^"]*)"', setup, re.M)
    assert qt_libs is not None
    assert qt_libs.group(1) == _entry().QT_SYSTEM_PACKAGES


def test_the_entry_prints_the_line_and_exits_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import builtins

    entry = _entry()
    real_import = builtins.__import__

    def no_libgl(name: str, *args: object, **kwargs: object) -> object:
        if name == "boris_desktop.app":
            raise ImportError("libGL.so.1: cannot open shared object file: No such file")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_libgl)
    assert entry.run() == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("boris-desktop: the system library libGL.so.1")
