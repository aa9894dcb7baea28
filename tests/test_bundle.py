"""The PyInstaller bundle (packaging/build-bundle.sh) and its desktop metadata.

The metadata tests are fast and always run. The bundle tests build dist/boris-desktop into a
temporary directory (a minute or two) and run it offscreen; they run only with BORIS_SLOW=1,
or against an existing bundle named by BORIS_BUNDLE_DIR (then nothing is built):

    BORIS_SLOW=1 QT_QPA_PLATFORM=offscreen .venv/bin/python -m pytest -q -m slow tests/test_bundle.py
    BORIS_BUNDLE_DIR=dist/boris-desktop .venv/bin/python -m pytest -q tests/test_bundle.py
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from store import Store
from store.services.demo import fill_demo
from store.version import RELEASED, __version__

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "resources" / "app"
APP_ID = "org.boris.BorisDesktop"
ICON_SIZES = (16, 32, 48, 64, 128, 256, 512)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

PREBUILT = os.environ.get("BORIS_BUNDLE_DIR")
slow = pytest.mark.slow
needs_bundle = pytest.mark.skipif(
    not (os.environ.get("BORIS_SLOW") == "1" or PREBUILT),
    reason="builds the bundle: set BORIS_SLOW=1 (or BORIS_BUNDLE_DIR to a built bundle)",
)


# --- metadata: one version everywhere ---------------------------------------------------


def test_metainfo_names_this_version_and_launches_the_desktop_file() -> None:
    root = ET.parse(APP / f"{APP_ID}.metainfo.xml").getroot()
    assert root.get("type") == "desktop-application"
    assert root.findtext("id") == APP_ID
    releases = root.findall("releases/release")
    assert releases, "the metainfo lists no release"
    # The newest release (this build's version, or the one a .dev build comes after).
    assert releases[0].get("version") == RELEASED
    assert root.findtext("launchable") == f"{APP_ID}.desktop"
    assert root.find("content_rating") is not None


def test_changelog_has_a_section_for_the_newest_release() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(rf"^## \[{re.escape(RELEASED)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", text, re.M)


def test_desktop_file_starts_the_gui_script() -> None:
    text = (APP / f"{APP_ID}.desktop").read_text(encoding="utf-8")
    entries = dict(
        line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#")
    )
    assert text.startswith("[Desktop Entry]\n")
    assert entries["Type"] == "Application"
    assert entries["Exec"] == "boris-desktop"
    assert entries["Icon"] == APP_ID
    assert entries["Categories"] == "Development;Utility;"


def test_icon_pngs_exist_at_every_size(qapp) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtGui import QImage

    assert (APP / "boris-desktop.svg").read_text(encoding="utf-8").lstrip().startswith("<svg")
    for size in ICON_SIZES:
        path = APP / f"boris-desktop-{size}.png"
        assert path.read_bytes()[:8] == PNG_SIGNATURE, path
        image = QImage(str(path))
        assert (image.width(), image.height()) == (size, size), path
        assert image.hasAlphaChannel(), path


# --- what the build needs ------------------------------------------------------------------


def _path_without(tmp_path: Path, *names: str) -> Path:
    """A PATH directory with the machine's commands, all but `names`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for d in [*os.environ.get("PATH", "").split(os.pathsep), "/usr/sbin", "/sbin"]:
        if not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            link = bin_dir / name
            if name not in names and not link.exists() and os.access(Path(d) / name, os.X_OK):
                link.symlink_to(Path(d) / name)
    return bin_dir


def test_setup_without_root_or_sudo_says_what_to_run_as_root(tmp_path: Path) -> None:
    """A user who is not root on a machine without sudo, with a system package missing."""
    bin_dir = _path_without(tmp_path, "sudo", "id", "dpkg-query")
    (bin_dir / "id").write_text("#!/bin/sh\necho 1000\n")
    # dpkg-query says libgl1 is not installed, every other package is.
    (bin_dir / "dpkg-query").write_text(
        '#!/bin/sh\nfor a; do last=$a; done\n[ "$last" = libgl1 ] || echo "install ok installed"\n'
    )
    for stub in ("id", "dpkg-query"):
        (bin_dir / stub).chmod(0o755)
    env = {**os.environ, "PATH": str(bin_dir)}
    proc = subprocess.run(
        ["bash", str(ROOT / "packaging" / "setup.sh")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "sudo: command not found" not in proc.stderr
    assert "no sudo" in proc.stderr
    assert "apt-get update && apt-get install -y libgl1" in proc.stderr
    assert "ready:" not in proc.stdout


def test_check_only_finds_that_objdump_is_missing(tmp_path: Path) -> None:
    """PyInstaller needs objdump (binutils): the check must say so, with the apt line, and fail."""
    env = {**os.environ, "PATH": str(_path_without(tmp_path, "objdump"))}
    proc = subprocess.run(
        [
            "bash",
            str(ROOT / "packaging" / "build-bundle.sh"),
            "--check-only",
            "--python",
            sys.executable,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert proc.returncode != 0
    assert "check passed" not in proc.stdout
    assert "objdump" in proc.stderr
    assert re.search(r"apt-get install -y (\S+ )*binutils\b", proc.stderr), proc.stderr


# --- the bundle ----------------------------------------------------------------------------


def _run(args: list[str | Path], env: dict[str, str], timeout: float = 120) -> str:
    proc = subprocess.run(
        [str(a) for a in args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == 0, f"{args} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    if PREBUILT:
        yield Path(PREBUILT).resolve()
        return
    out = tmp_path_factory.mktemp("bundle")
    proc = subprocess.run(
        [
            "bash",
            str(ROOT / "packaging" / "build-bundle.sh"),
            "--dist",
            str(out / "dist"),
            "--work",
            str(out / "work"),
            "--python",
            sys.executable,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, f"build failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    yield out / "dist" / "boris-desktop"
    shutil.rmtree(out / "work", ignore_errors=True)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """No display, and no user directories: settings and the default store go to tmp."""
    e = {k: v for k, v in os.environ.items() if not k.startswith(("BORIS_", "QT_"))}
    e.pop("DISPLAY", None)
    e.pop("WAYLAND_DISPLAY", None)
    e.update(
        QT_QPA_PLATFORM="offscreen",
        HOME=str(tmp_path / "home"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_DATA_HOME=str(tmp_path / "data"),
    )
    return e


@slow
@needs_bundle
def test_bundle_layout(bundle: Path) -> None:
    for exe in ("boris-desktop", "boris"):
        assert os.access(bundle / exe, os.X_OK), exe
    share = bundle / "share"
    assert (share / "applications" / f"{APP_ID}.desktop").is_file()
    assert (share / "metainfo" / f"{APP_ID}.metainfo.xml").is_file()
    assert (share / "icons" / "hicolor" / "scalable" / "apps" / f"{APP_ID}.svg").is_file()
    for size in ICON_SIZES:
        assert (share / "icons" / "hicolor" / f"{size}x{size}" / "apps" / f"{APP_ID}.png").is_file()
    # Alembic reads the migration scripts as files.
    assert list((bundle / "_internal" / "store" / "migrations" / "versions").glob("0*.py"))


@slow
@needs_bundle
@pytest.mark.parametrize("exe", ["boris-desktop", "boris"])
def test_bundle_version(bundle: Path, env: dict[str, str], exe: str) -> None:
    assert _run([bundle / exe, "--version"], env).strip() == f"{exe} {__version__}"


@slow
@needs_bundle
def test_bundle_screenshot_of_a_fresh_demo_store(
    bundle: Path, env: dict[str, str], tmp_path: Path, qapp
) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtGui import QImage

    # The README's demo: the demo store under the user data dir (XDG_DATA_HOME is tmp here)
    # does not exist; the bundle creates, migrates and fills it.
    directory = Path(env["XDG_DATA_HOME"]) / "boris" / "demo-store"
    shot = tmp_path / "shot.png"
    _run([bundle / "boris-desktop", "--demo", "--screenshot", shot], env)
    data = shot.read_bytes()
    assert len(data) > 10_000
    assert data[:8] == PNG_SIGNATURE
    image = QImage(str(shot))
    assert not image.isNull()
    assert (image.width(), image.height()) == (1280, 780)

    listed = json.loads(_run([bundle / "boris", "--store", directory, "tasks", "--json"], env))[
        "result"
    ]
    reference = Store.open(tmp_path / "reference")
    try:
        expected = set(fill_demo(reference))
    finally:
        reference.close()
    assert {t["id"] for t in listed} == expected
    # The user's default store beside it was not created, let alone filled.
    assert not (directory.parent / "boris.sqlite").exists()


@slow
@needs_bundle
def test_bundle_migrates_an_old_store(bundle: Path, env: dict[str, str], tmp_path: Path) -> None:
    directory = tmp_path / "old"
    shutil.copytree(ROOT / "tests" / "fixtures" / "store-0001", directory)
    listed = json.loads(_run([bundle / "boris", "--store", directory, "tasks", "--json"], env))
    assert listed["ok"] and listed["result"]
    assert list((directory / "backups").glob("boris-schema0001-*.sqlite"))


@slow
@needs_bundle
def test_bundle_serves_mcp(bundle: Path, env: dict[str, str], tmp_path: Path) -> None:
    """The bundle's `boris mcp` answers the SDK's client: the agent's side ships too."""
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=str(bundle / "boris"),
        args=["mcp", "--store", str(tmp_path / "s"), "--actor", "agent:bundled"],
        env=env,
    )

    async def scenario() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            names = {t.name for t in (await session.list_tools()).tools}
            assert {"plan_effect", "wait_for_approval"} <= names
            made = await session.call_tool(
                "create_task",
                {"title": "T", "owner": "o", "objective": "x", "scope_paths": [str(tmp_path)]},
            )
            assert made.structured_content["ok"] is True

    anyio.run(scenario)
